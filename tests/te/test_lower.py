"""Lowering the default schedule: parameters, loops, scratch buffers, reductions, arg errors."""

import pytest

from kiln import te, tir
from kiln.errors import IRError, IRValueError
from kiln.ir import structural_equal
from tests.te.conftest import assert_pure_tir
from tests.te.tir_text import loop_summary, show


def _nodes(func, cls):
    return [n for n in tir.pre_order_nodes(func.body) if isinstance(n, cls)]


def _ok(func):
    assert tir.verify_well_formed(func) == [], show(func)
    return func


def test_elementwise_params_buffers_and_loops():
    A = te.placeholder((4, 6), name="A")
    B = te.compute((4, 6), lambda i, j: A[i, j] + tir.const(1.0), name="B")
    f = _ok(te.create_prim_func([A, B]))
    assert f.global_symbol == "main" and f.get_attr("tir.noalias") is True
    assert [p.name for p in f.params] == ["A", "B"]
    assert [f.buffer_map[p].name for p in f.params] == ["A", "B"]
    assert [tuple(d.value for d in f.buffer_map[p].shape) for p in f.params] == [(4, 6)] * 2
    assert loop_summary(f) == [("i", 4, "serial"), ("j", 6, "serial")]
    (store,) = _nodes(f, tir.BufferStore)
    assert store.buffer is f.buffer_map[f.params[1]]
    assert isinstance(store.value.a, tir.BufferLoad)


def test_name_override_and_lower_attrs():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i], name="B")
    assert te.create_prim_func([A, B], name="copy").global_symbol == "copy"
    f = te.lower(te.create_schedule(B), [A, B], name="cp", attrs={"tag": "x"})
    assert f.global_symbol == "cp" and f.get_attr("tag") == "x"


def test_reduction_initializes_then_accumulates():
    A = te.placeholder((4, 5), name="A")
    k = te.reduce_axis((0, 5), name="k")
    B = te.compute((4,), lambda i: te.max(A[i, k], axis=k), name="B")
    f = _ok(te.create_prim_func([A, B]))
    outer = f.body
    assert isinstance(outer, tir.For) and outer.loop_var.name == "i"
    init, loop = outer.body.seq
    assert isinstance(init, tir.BufferStore) and init.value.value < -3e38
    assert isinstance(loop, tir.For) and loop.loop_var.name == "k"
    assert isinstance(loop.body.value, tir.Max)


def test_reduction_where_guards_update_only():
    A = te.placeholder((6,), name="A")
    k = te.reduce_axis((0, 6), name="k")
    B = te.compute((1,), lambda i: te.sum(A[k], axis=k, where=k > 1), name="B")
    f = _ok(te.create_prim_func([A, B]))
    (branch,) = _nodes(f, tir.IfThenElse)
    assert isinstance(branch.then_case, tir.BufferStore)
    assert isinstance(branch.condition, tir.GT)


def test_intermediate_tensor_is_allocated_scratch():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * tir.const(2.0), name="B")
    C = te.compute((8,), lambda i: B[i] + tir.const(1.0), name="C")
    f = _ok(te.create_prim_func([A, C]))
    assert isinstance(f.body, tir.Allocate)
    assert isinstance(f.body.body, tir.DeclBuffer) and f.body.body.buffer.name == "B"
    assert [e.value for e in f.body.extents] == [8]
    assert len(f.body.body.body.seq) == 2


def test_intermediate_in_args_becomes_parameter():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * tir.const(2.0), name="B")
    C = te.compute((8,), lambda i: B[i] + tir.const(1.0), name="C")
    f = _ok(te.create_prim_func([A, B, C]))
    assert not _nodes(f, tir.Allocate)
    assert [p.name for p in f.params] == ["A", "B", "C"]


def test_symbolic_shapes_bind_through_buffers():
    n, m = te.size_var("n"), te.size_var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    f = _ok(te.create_prim_func([A, B]))
    assert [(name, str(ext)) for name, ext, _ in loop_summary(f)] == [("i", "n"), ("k", "m")]
    assert f.buffer_map[f.params[0]].shape[0] is n


def test_scalar_var_argument():
    n = te.var("n")
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + tir.Cast("float32", n), name="B")
    f = _ok(te.lower(te.create_schedule(B), [A, B, n]))
    assert f.params[2] is n and n not in f.buffer_map


def test_rank_zero_output():
    A = te.placeholder((5,), name="A")
    k = te.reduce_axis((0, 5), name="k")
    S = te.compute((), lambda: te.sum(A[k], axis=k), name="S")
    f = _ok(te.create_prim_func([A, S]))
    assert f.buffer_map[f.params[1]].shape == ()
    assert loop_summary(f) == [("k", 5, "serial")]


def test_names_are_unique_within_a_function():
    A = te.placeholder((4,), name="T")
    B = te.compute((4,), lambda i: A[i], name="T")
    C = te.compute((4,), lambda i: B[i], name="T")
    f = _ok(te.create_prim_func([A, C]))
    bufs = [f.buffer_map[p].name for p in f.params] + [
        b.buffer.name for b in _nodes(f, tir.DeclBuffer)
    ]
    assert len(set(bufs)) == 3
    names = [lp.loop_var.name for lp in _nodes(f, tir.For)]
    assert len(set(names)) == len(names) == 2


def test_int64_shapes():
    n = te.size_var("n", "int64")
    A = te.placeholder((n, 3), name="A")
    B = te.compute((n, 3), lambda i, j: A[i, j] * tir.const(3.0), name="B")
    s = te.create_schedule(B)
    io, ii = s[B].split(B.op.axis[0], factor=4)
    f = _ok(te.lower(s, [A, B]))
    assert all(lp.loop_var.dtype == "int64" for lp in _nodes(f, tir.For))


@pytest.mark.parametrize(
    "make_args, needles",
    [
        (lambda A, B, C: [A, C], ["input 'B'", "not passed"]),
        (lambda A, B, C: [A, B], ["output 'C'"]),
        (lambda A, B, C: [A, B, C, A], ["'A'", "twice"]),
        (lambda A, B, C: [A, B, C, 3], ["tensors or scalar Vars"]),
        (lambda A, B, C: "ABC", ["list of tensors"]),
    ],
)
def test_argument_errors(make_args, needles):
    A = te.placeholder((4,), name="A")
    B = te.placeholder((4,), name="B")
    C = te.compute((4,), lambda i: A[i] + B[i], name="C")
    with pytest.raises((IRError, IRValueError)) as e:
        te.lower(te.create_schedule(C), make_args(A, B, C))
    for n in needles:
        assert n in str(e.value), str(e.value)


def test_unbound_variable_reported():
    x = te.var("x")
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] * tir.Cast("float32", x), name="B")
    with pytest.raises(IRValueError, match="variable 'x' used by 'B' is not bound"):
        te.create_prim_func([A, B])


def test_tensor_outside_schedule_and_bad_inputs():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i], name="B")
    other = te.compute((4,), lambda i: A[i], name="other")
    with pytest.raises((IRError, IRValueError), match="'other' is not part of this schedule"):
        te.lower(te.create_schedule(B), [A, B, other])
    with pytest.raises((IRError, IRValueError), match="expected a Schedule"):
        te.lower([B], [A, B])
    with pytest.raises((IRError, IRValueError), match="no compute tensor"):
        te.create_prim_func([A])
    with pytest.raises((IRError, IRValueError), match="placeholder 'A' cannot be an output"):
        te.create_schedule(A)


def _scheduled_matmul():
    A = te.placeholder((20, 12), name="A")
    B = te.placeholder((12, 9), name="B")
    k = te.reduce_axis((0, 12), name="k")
    P = te.compute((20, 12), lambda i, j: A[i, j] * tir.const(2.0), name="P")
    C = te.compute((20, 9), lambda i, j: te.sum(P[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C)
    CL = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(*C.op.axis, 8, 4)
    s[CL].compute_at(s[C], jo)
    s[P].compute_inline()
    BB = s.cache_read(B, "local", [CL])
    s[BB].compute_at(s[CL], CL.op.reduce_axis[0])
    return s, [A, B, C]


def test_lowering_is_deterministic_and_leaves_no_te_nodes():
    s, args = _scheduled_matmul()
    f1, f2 = _ok(te.lower(s, args)), _ok(te.lower(s, args))
    assert structural_equal(f1, f2)
    assert_pure_tir(f1)
    assert [st.name for st in s.stages] == ["A", "P", "B", "B_local", "C_local", "C"]


def test_reshape_chain_over_a_symbolic_dim_reads_plain_indices():
    """A transpose written as reshape -> permute -> reshape over a symbolic ``seq`` reads its
    input at ``[b, s, h*16 + d]``: no division by ``seq`` survives the axes' ranges."""
    from kiln.topi.shape_ops import reshape_to

    seq = tir.SizeVar("seq", "int64")
    A = te.placeholder((2, seq, 32), name="A")
    B = reshape_to(A, (2, seq, 2, 16))
    C = te.compute((2, 2, 16, seq), lambda b, h, d, t: B[b, t, h, d], name="C")
    D = reshape_to(C, (4, 16, seq))
    s = te.create_schedule(D)
    for t in (B, C):
        s[t].compute_inline()
    f = _ok(te.lower(s, [A, D]))
    (store,) = _nodes(f, tir.BufferStore)
    divisions = [
        n
        for n in tir.pre_order_nodes(store.value)
        if isinstance(n, (tir.FloorDiv, tir.FloorMod)) and not isinstance(n.b, tir.IntImm)
    ]
    assert divisions == [], show(f)
