"""Construction of TIR nodes: conversion rules, dtype inference, and errors for bad input."""

import pytest

from kiln import tir
from kiln.errors import IRError, IRValueError, KilnError
from kiln.ir import GlobalVar, assert_structural_equal
from tests.tir.builders import caller_module, matmul_relu


def test_python_operators_build_nodes():
    x = tir.Var("x")
    assert isinstance(x + 1, tir.Add) and (x + 1).b.dtype == "int32"
    assert isinstance(1 + x, tir.Add) and isinstance(x // 4, tir.FloorDiv)
    assert isinstance(x % 4, tir.FloorMod) and isinstance(x / 2, tir.Div)
    assert isinstance(x < 3, tir.LT) and (x < 3).dtype == "bool"
    assert isinstance(x.eq(3), tir.EQ) and x == x and not (x == tir.Var("x"))
    cond = (x < 3) & (x > 0)
    assert isinstance(cond, tir.And) and isinstance(~cond, tir.Not)
    assert (x & 3).op.name == "tir.bitwise_and"


def test_float_dtype_is_taken_from_the_other_operand():
    y = tir.Var("y", "float16")
    assert (y * 0.5).b.dtype == "float16"


def test_python_float_without_dtype_is_an_error():
    with pytest.raises(IRError, match="no dtype can be inferred"):
        tir.convert(1.5)
    with pytest.raises(IRError, match="no dtype can be inferred"):
        tir.Evaluate(2.5)
    with pytest.raises(IRError, match="float"):
        tir.Var("i") + 1.5


def test_mismatched_dtypes_are_rejected():
    with pytest.raises(IRError, match="operand dtypes differ"):
        tir.Add(tir.Var("a", "int32"), tir.Var("b", "int64"))


def test_operators_broadcast_a_scalar_to_a_vector():
    x, y = tir.Var("x"), tir.Var("y")
    ramp = tir.Ramp(x, 1, 4)
    for got, want in [
        (ramp + y, tir.Add(ramp, tir.Broadcast(y, 4))),
        (y * ramp, tir.Mul(tir.Broadcast(y, 4), ramp)),
        (2 - ramp, tir.Sub(tir.Broadcast(tir.const(2), 4), ramp)),
        (ramp < 3, tir.LT(ramp, tir.Broadcast(tir.const(3), 4))),
        (ramp.eq(y), tir.EQ(ramp, tir.Broadcast(y, 4))),
    ]:
        assert_structural_equal(got, want)
    f = tir.Var("f", "float32x8")
    assert (f * 0.5).b.dtype == "float32x8" and isinstance((f * 0.5).b, tir.Broadcast)
    with pytest.raises(IRError, match="operand dtypes differ"):
        ramp + tir.Ramp(x, 1, 8)  # two vectors of different lanes stay an error
    with pytest.raises(IRError, match="operand dtypes differ"):
        tir.Add(ramp, y)  # constructors store what they are given


def test_buffer_index_count_must_match_rank():
    A = tir.decl_buffer((4, 4), "float32", "A")
    with pytest.raises((IRError, IRValueError), match="buffer 'A' has 2 dimension"):
        A[1]
    with pytest.raises((IRError, IRValueError), match="indexed with 3"):
        tir.BufferStore(A, tir.const(1.0), (0, 1, 2))
    with pytest.raises((IRError, IRValueError), match="must be an integer"):
        A[tir.Var("f", "float32"), 0]


def test_vector_load_dtype_from_ramp():
    A = tir.decl_buffer((64,), "float32", "A")
    load = A[tir.Ramp(tir.const(0), 1, 8)]
    assert load.dtype == "float32x8"
    assert tir.Broadcast(tir.const(1.0), 4).dtype == "float32x4"


def test_wrong_node_kinds_are_named():
    with pytest.raises(IRError, match="expected a statement"):
        tir.SeqStmt((tir.Evaluate(0), "oops"))
    with pytest.raises(IRError, match="loop variable must be a Var"):
        tir.For(3, 0, 4, tir.ForKind.SERIAL, tir.Evaluate(0))
    with pytest.raises(IRError, match="Call op"):
        tir.Call("int32", 42, ())
    with pytest.raises(IRError, match="unknown dtype"):
        tir.Var("x", "float33")
    with pytest.raises(IRError, match="extent must be an integer"):
        tir.decl_buffer((2.5,), "float32")


def test_expression_has_no_truth_value():
    with pytest.raises(KilnError, match="no Python truth value"):
        bool(tir.Var("x") < 3)


def test_call_to_global_var_and_typing():
    mod = caller_module()
    call = mod["main"].body.value
    assert isinstance(call.op, GlobalVar) and call.op.name_hint == "subroutine"
    sub = mod["subroutine"]
    assert tir.get_type(sub.params[0]) == tir.pointer_to("float32")
    buf = sub.body.buffer
    assert tir.get_type(tir.address_of(buf[0])) == tir.pointer_to("float32")
    assert tir.get_type(tir.access_ptr(buf, "r")) == tir.pointer_to("float32")
    assert tir.get_type(tir.Var("n")) == tir.PrimType("int32")


def test_scope_lives_on_the_pointer():
    s = tir.decl_buffer((32,), "float16", "S", scope="shared.dyn")
    assert s.scope == "shared.dyn" and s.data.type_annotation.storage_scope == "shared.dyn"
    assert tir.decl_buffer((1,), "float32").scope == "global"


def test_mutator_preserves_identity_and_rewrites():
    f = matmul_relu(4)

    class Nothing(tir.Mutator):
        pass

    assert Nothing().visit(f) is f

    class ParallelToSerial(tir.Mutator):
        def visit_For(self, s):
            s = self.generic_visit(s)
            if s.kind is tir.ForKind.PARALLEL:
                from dataclasses import replace

                return replace(s, kind=tir.ForKind.SERIAL)
            return s

    g = ParallelToSerial().visit(f)
    assert g is not f and g.body.kind is tir.ForKind.SERIAL
    assert g.body.body is f.body.body  # the unchanged inner loop is shared


def test_substitute_and_specialize():
    x, y = tir.Var("x"), tir.Var("y")
    e = tir.substitute(x * 2 + y, {x: 5})
    assert isinstance(e.a.a, tir.IntImm) and e.a.a.value == 5 and e.b is y
    f = tir.PrimFunc((x, y), tir.Evaluate(x + y))
    g = f.specialize({x: 3})
    assert len(g.params) == 1 and g.params[0] is y


def test_substitution_keeps_a_shared_subtree_shared():
    """A DAG stays a DAG: a subtree used in k places is rewritten once (a chain of n such
    levels would otherwise grow into k**n copies)."""
    from kiln.ir.visitor import distinct_nodes, pre_order_nodes

    def chain(levels: int) -> tir.PrimExpr:
        e = x + 1
        for _ in range(levels):  # each level uses the one below twice: 2**levels paths
            e = e * 2 + e
        return e

    x, y = tir.Var("x"), tir.Var("y")
    out = tir.substitute(chain(14), {x: y})
    assert out.a.a is out.b  # both uses of the level below are one new node
    assert len(distinct_nodes(out)) == len(distinct_nodes(chain(14))) < 100
    small = tir.substitute(chain(3), {x: y})
    assert sum(n is y for n in pre_order_nodes(small)) == 8  # the same value as a tree


def test_integer_constants_must_fit_their_dtype():
    with pytest.raises((IRError, IRValueError), match="does not fit int32"):
        tir.IntImm("int32", 2**40)
    with pytest.raises((IRError, IRValueError), match="does not fit uint8"):
        tir.convert(-1, "uint8")
    u = tir.Var("u", "uint8")
    assert isinstance(-u, tir.Sub) and (-u).a.value == 0
    assert tir.IntImm("int64", 2**63 - 1).value == 2**63 - 1


def test_star_import_does_not_shadow_builtins():
    scope: dict = {}
    exec("from kiln.tir import *", scope)
    assert "type" not in scope and "Var" in scope


def test_predicates_are_bool_and_vload_takes_lists():
    x = tir.Var("x", "float32")
    assert tir.math("isnan", x).dtype == "bool"
    A = tir.decl_buffer((8,), "float32", "A")
    assert A.vload([0]).indices[0].value == 0


def test_visitors_dispatch_along_the_class_hierarchy():
    class AxisVar(tir.Var):
        pass

    i = AxisVar("i")
    out = tir.substitute(i + 1, {i: 5})
    assert isinstance(out.a, tir.IntImm) and out.a.value == 5


def test_small_conversions():
    assert tir.max_value("bool").value == 1 and tir.min_value("bool").value == 0
    assert isinstance(tir.convert(True, "float32"), tir.FloatImm)
    n = tir.Var("n", "int64")
    assert tir.Range(0, n).min.dtype == "int64"
    with pytest.raises(IRError, match="min is int32 but extent is int64"):
        tir.Range(tir.const(0), n)


def test_a_python_bool_condition_is_refused():
    # `tx == 0` on IR expressions is Python identity (False): a kernel guarded by it never ran.
    tx = tir.Var("tx", "int32")
    with pytest.raises(IRError, match=r"Python bool False.*a\.eq\(b\)"):
        tir.IfThenElse(tx == 0, tir.Evaluate(0))
    assert isinstance(tir.IfThenElse(tx.eq(0), tir.Evaluate(0)).condition, tir.EQ)
