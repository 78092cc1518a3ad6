"""The verifier accepts good functions and rejects each kind of malformed one, naming the node."""

import pytest

from kiln import tir
from kiln.errors import VerifyError
from kiln.ir import GlobalVar, IRModule
from tests.tir.builders import caller_module, matmul_relu, symbolic_add


@pytest.mark.parametrize("make", [matmul_relu, caller_module, symbolic_add])
def test_good_ir_passes(make):
    assert tir.verify_well_formed(make()) == []


def _func(body, params=(), bmap=None):
    return tir.PrimFunc(tuple(params), body, buffer_map=bmap or {}, attrs={"global_symbol": "f"})


def _fails(obj, *needles):
    with pytest.raises(VerifyError) as e:
        tir.verify_well_formed(obj)
    for n in needles:
        assert n in str(e.value), str(e.value)
    return str(e.value)


def test_use_before_definition():
    x = tir.Var("x")
    _fails(_func(tir.Evaluate(x + 1)), "Var 'x'", "used before it is defined")


def test_a_buffer_dim_expression_may_precede_the_buffer_binding_its_variable():
    # A: (n * 2,) comes first; B: (n,) binds n (MakePackedAPI binds plain dims first)
    n = tir.Var("n", "int64")
    a_h, b_h = tir.Var("A", "handle"), tir.Var("B", "handle")
    A = tir.decl_buffer((n * 2,), "float32", "A")
    B = tir.decl_buffer((n,), "float32", "B")
    body = tir.BufferStore(B, A[0], (0,))
    assert tir.verify_well_formed(_func(body, (a_h, b_h), {a_h: A, b_h: B})) == []
    # with no buffer binding n, the expression is still an error
    _fails(_func(tir.Evaluate(A[0]), (a_h,), {a_h: A}), "used before it is defined")


def test_use_out_of_scope():
    i = tir.Var("i")
    loop = tir.For(i, 0, 4, tir.ForKind.SERIAL, tir.Evaluate(i))
    _fails(_func(tir.seq(loop, tir.Evaluate(i))), "variable 'i' is used before")


def test_variable_defined_twice():
    i = tir.Var("i")
    inner = tir.For(i, 0, 2, tir.ForKind.SERIAL, tir.Evaluate(i))
    _fails(_func(tir.For(i, 0, 2, tir.ForKind.SERIAL, inner)), "For 'i'", "defined more than once")


def test_let_redefines_parameter():
    n = tir.Var("n")
    _fails(_func(tir.LetStmt(n, 1, tir.Evaluate(n)), params=(n,)), "LetStmt", "more than once")


def test_undeclared_buffer():
    B = tir.decl_buffer((4,), "float32", "B")
    store = tir.BufferStore(B, tir.const(1.0), (0,))
    _fails(_func(store), "BufferStore", "buffer 'B' is used but never declared")


def test_load_from_undeclared_buffer_named():
    a_h = tir.Var("A", "handle")
    A = tir.decl_buffer((4,), "float32", "A")
    ghost = tir.decl_buffer((4,), "float32", "ghost")
    body = tir.BufferStore(A, ghost[0], (0,))
    _fails(_func(body, (a_h,), {a_h: A}), "BufferLoad", "'ghost'")


def test_stored_dtype_must_match_buffer():
    a_h = tir.Var("A", "handle")
    A = tir.decl_buffer((4,), "float32", "A")
    bad = tir.BufferStore(A, tir.const(1.0, "float32"), (0,))
    object.__setattr__(bad, "value", tir.const(1, "int32"))  # bypass the constructor's conversion
    _fails(_func(bad, (a_h,), {a_h: A}), "stores a int32 value into buffer 'A' of float32")


def test_loop_bound_dtype_mismatch():
    i = tir.Var("i", "int64")
    loop = tir.For(i, 0, 4, tir.ForKind.SERIAL, tir.Evaluate(0))
    object.__setattr__(loop, "extent", tir.const(4, "int32"))
    _fails(_func(loop), "For 'i'", "loop bound dtype int32")


def test_operand_dtype_mismatch_reported_not_crashed():
    add = tir.Add(tir.const(1), tir.const(2))
    object.__setattr__(add, "b", tir.const(2, "int64"))
    _fails(_func(tir.Evaluate(add)), "Add", "operand dtypes differ")


def test_thread_extent_inconsistent_in_one_kernel():
    tx = tir.IterVar(tir.Range(0, 32), tir.Var("tx"), thread_tag="threadIdx.x")
    i = tir.Var("i")
    loop = tir.For(
        i,
        0,
        64,
        tir.ForKind.THREAD_BINDING,
        tir.Evaluate(i),
        thread_binding=tir.IterVar(tir.Range(0, 64), i, thread_tag="threadIdx.x"),
    )
    kernel = tir.AttrStmt(tx, "thread_extent", 32, loop)
    msg = _fails(_func(kernel), "threadIdx.x")
    assert "bound again inside its own binding" in msg


def test_sibling_kernels_may_use_different_extents():
    def kernel(n):
        tx = tir.IterVar(tir.Range(0, n), tir.Var("tx"), thread_tag="threadIdx.x")
        return tir.AttrStmt(tx, "thread_extent", n, tir.Evaluate(tx.var))

    assert tir.verify_well_formed(_func(tir.seq(kernel(32), kernel(64)))) == []


def test_thread_binding_loop_needs_tag():
    i = tir.Var("i")
    loop = tir.For(i, 0, 4, tir.ForKind.THREAD_BINDING, tir.Evaluate(i))
    _fails(_func(loop), "thread-binding loop has no thread tag")


def test_call_to_missing_module_function():
    f = _func(tir.Evaluate(tir.Call("int32", GlobalVar("nowhere"), ())))
    _fails(IRModule({"f": f}), "'nowhere', which is not a function of the module")


def test_non_bool_condition():
    x = tir.Var("x", "float32")
    body = tir.IfThenElse(x, tir.Evaluate(0))
    _fails(_func(body, (x,)), "IfThenElse", "condition must be bool")


def test_all_problems_reported_at_once():
    x, y = tir.Var("x"), tir.Var("y")
    msg = _fails(_func(tir.seq(tir.Evaluate(x), tir.Evaluate(y))), "'x'", "'y'")
    listing, _, reprint = msg.partition("problems marked ---")
    assert listing.count("used before") == 2
    assert reprint.count("# <-- error") == 2


def test_error_reprints_the_function_with_the_bad_statement_marked():
    i, j = tir.Var("i"), tir.Var("j")
    buf = tir.decl_buffer((16,), "float32", "A")
    p = tir.Var("A", "handle")
    store = tir.BufferStore(buf, buf[j] * tir.const(2.0), (i,))
    f = tir.PrimFunc((p,), tir.For(i, 0, 16, tir.ForKind.SERIAL, store), buffer_map={p: buf})
    msg = _fails(f, "'j'")
    marked = [line for line in msg.splitlines() if "# <-- error" in line]
    assert len(marked) == 1
    assert marked[0].lstrip().startswith("A[i] = A[j]")
    assert "used before it is defined" in marked[0]


def test_verifier_never_crashes_on_garbage():
    f = _func(tir.Evaluate(0))
    object.__setattr__(f, "body", "not a statement")
    errors = tir.verify_well_formed(f, raise_error=False)
    assert errors and all(isinstance(e, str) for e in errors)
    assert tir.verify_well_formed(42, raise_error=False) == [  # type: ignore[arg-type]
        "expected a PrimFunc or IRModule, got int"
    ]


def test_buffer_with_elem_offset_and_vector_buffers_verify():
    p = tir.Var("a", "handle")
    buf = tir.decl_buffer((4,), "float32", "A", elem_offset=0)
    assert (
        tir.verify_well_formed(
            tir.PrimFunc((p,), tir.BufferStore(buf, 1.0, (0,)), buffer_map={p: buf})
        )
        == []
    )
    q = tir.Var("v", "handle")
    vb = tir.decl_buffer((4,), "float32x4", "V")
    f = tir.PrimFunc((q,), tir.BufferStore(vb, vb[1], (0,)), buffer_map={q: vb})
    assert tir.verify_well_formed(f) == []


def test_attr_iter_var_defines_its_variable():
    iv = tir.IterVar(tir.Range(0, 4), tir.Var("vt"), thread_tag="vthread")
    f = _func(tir.AttrStmt(iv, "pragma_custom", 1, tir.Evaluate(iv.var)))
    assert tir.verify_well_formed(f) == []


def test_sibling_thread_binding_loop_nests_are_separate_kernels():
    def kernel(n):
        i = tir.Var("i")
        iv = tir.IterVar(None, i, thread_tag="blockIdx.x")
        return tir.For(i, 0, n, tir.ForKind.THREAD_BINDING, tir.Evaluate(i), thread_binding=iv)

    assert tir.verify_well_formed(_func(tir.seq(kernel(1), kernel(100)))) == []
