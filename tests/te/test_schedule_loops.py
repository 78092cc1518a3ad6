"""split / fuse / reorder / tile: the loops they produce, guards, and precondition errors."""

import pytest

from kiln import te, tir
from kiln.errors import IRError, IRValueError
from tests.te.tir_text import expr, loop_summary, show


def _ew(shape=(16, 12), name="B"):
    A = te.placeholder(shape, name="A")
    B = te.compute(shape, lambda *i: A[i] + tir.const(1.0), name=name)
    return A, B, te.create_schedule(B)


def _lower(s, args):
    f = te.lower(s, args)
    assert tir.verify_well_formed(f) == [], show(f)
    return f


def _guards(f):
    return [expr(n.condition) for n in tir.pre_order_nodes(f.body) if isinstance(n, tir.IfThenElse)]


def _err(fn, *needles):
    with pytest.raises((IRError, IRValueError)) as e:
        fn()
    for n in needles:
        assert n in str(e.value), str(e.value)


def test_split_divisible_has_no_guard():
    A, B, s = _ew()
    xo, xi = s[B].split(B.op.axis[0], factor=4)
    assert (xo.name, xi.name) == ("i0_outer", "i0_inner")
    assert s[B].leaf_iter_vars == [xo, xi, B.op.axis[1]]
    f = _lower(s, [A, B])
    assert loop_summary(f) == [
        ("i0_outer", 4, "serial"),
        ("i0_inner", 4, "serial"),
        ("i1", 12, "serial"),
    ]
    assert _guards(f) == []
    (store,) = [n for n in tir.pre_order_nodes(f.body) if isinstance(n, tir.BufferStore)]
    assert expr(store.indices[0]) == "((i0_outer * 4) + i0_inner)"


def test_split_non_divisible_adds_guard_at_innermost_needed_loop():
    A, B, s = _ew((10, 3))
    xo, xi = s[B].split(B.op.axis[0], factor=4)
    f = _lower(s, [A, B])
    assert loop_summary(f)[:2] == [("i0_outer", 3, "serial"), ("i0_inner", 4, "serial")]
    assert _guards(f) == ["(((i0_outer * 4) + i0_inner) < 10)"]
    # the guard sits inside i0_inner, around the i1 loop (not inside it)
    inner = f.body.body
    assert isinstance(inner, tir.For) and isinstance(inner.body, tir.IfThenElse)


def test_split_nparts():
    A, B, s = _ew((10, 3))
    xo, xi = s[B].split(B.op.axis[0], nparts=3)
    f = _lower(s, [A, B])
    assert loop_summary(f)[:2] == [("i0_outer", 3, "serial"), ("i0_inner", 4, "serial")]
    assert _guards(f) == ["(((i0_outer * 4) + i0_inner) < 10)"]


def test_split_symbolic_extent():
    n = te.size_var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i], name="B")
    s = te.create_schedule(B)
    s[B].split(B.op.axis[0], factor=8)
    f = _lower(s, [A, B])
    assert loop_summary(f) == [("i_outer", "((n + 7) // 8)", "serial"), ("i_inner", 8, "serial")]
    assert _guards(f) == ["(((i_outer * 8) + i_inner) < n)"]


def test_nested_split_of_inner_guards_each_level():
    A, B, s = _ew((10,))
    xo, xi = s[B].split(B.op.axis[0], factor=5)
    xio, xii = s[B].split(xi, factor=2)
    f = _lower(s, [A, B])
    assert [e for _, e, _ in loop_summary(f)] == [2, 3, 2]
    assert "(((i_inner_outer * 2) + i_inner_inner) < 5)" in _guards(f)


def test_fuse_and_split_recovers_indices():
    A, B, s = _ew((6, 5))
    fused = s[B].fuse(*B.op.axis)
    assert fused.name == "i0_i1_fused"
    fo, fi = s[B].split(fused, factor=8)
    f = _lower(s, [A, B])
    assert loop_summary(f) == [
        ("i0_i1_fused_outer", 4, "serial"),
        ("i0_i1_fused_inner", 8, "serial"),
    ]
    (store,) = [n for n in tir.pre_order_nodes(f.body) if isinstance(n, tir.BufferStore)]
    assert expr(store.indices[0]) == "(((i0_i1_fused_outer * 8) + i0_i1_fused_inner) // 5)"
    assert _guards(f) == ["(((i0_i1_fused_outer * 8) + i0_i1_fused_inner) < 30)"]


def test_fuse_three_axes():
    A, B, s = _ew((2, 3, 4))
    fused = s[B].fuse(B.op.axis[0], B.op.axis[1], B.op.axis[2])
    assert loop_summary(_lower(s, [A, B])) == [(fused.name, 24, "serial")]


def test_reorder_and_tile():
    A, B, s = _ew((8, 8))
    i, j = B.op.axis
    s[B].reorder(j, i)
    assert loop_summary(_lower(s, [A, B])) == [("i1", 8, "serial"), ("i0", 8, "serial")]
    A, B, s = _ew((8, 8))
    xo, yo, xi, yi = s[B].tile(*B.op.axis, 4, 2)
    assert s[B].leaf_iter_vars == [xo, yo, xi, yi]
    assert [e for _, e, _ in loop_summary(_lower(s, [A, B]))] == [2, 4, 4, 2]


def test_reduction_axis_moved_outside_data_axis_reinitializes_inside():
    A = te.placeholder((4, 6), name="A")
    k = te.reduce_axis((0, 6), name="k")
    B = te.compute((4, 3), lambda i, j: te.sum(A[i, k] * tir.const(1.0), axis=k), name="B")
    s = te.create_schedule(B)
    i, j = B.op.axis
    s[B].reorder(i, k, j)
    f = _lower(s, [A, B])
    names = [n for n, _, _ in loop_summary(f)]
    assert names == ["i", "j_init", "k", "j"]


def test_extent_one_loops_are_not_emitted():
    A, B, s = _ew((4, 1))
    assert loop_summary(_lower(s, [A, B])) == [("i0", 4, "serial")]


def test_split_errors():
    A, B, s = _ew()
    i, j = B.op.axis
    io, ii = s[B].split(i, factor=4)
    _err(lambda: s[B].split(i, factor=2), "split", "'i0'", "no longer exists", "i0_outer")
    _err(lambda: s[B].split(j), "exactly one of factor= and nparts=")
    _err(lambda: s[B].split(j, factor=2, nparts=2), "exactly one")
    _err(lambda: s[B].split(j, factor=0), "positive integer")
    _err(lambda: s[B].split(j, factor=2.5), "positive integer")
    _err(lambda: s[B].split("j", factor=2), "expected an axis")


def test_axis_of_another_stage_rejected():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i], name="B")
    C = te.compute((8,), lambda i: B[i], name="C")
    s = te.create_schedule(C)
    _err(lambda: s[C].reorder(B.op.axis[0]), "reorder", "belongs to stage 'B', not 'C'")
    _err(lambda: s[C].split(B.op.axis[0], factor=2), "belongs to stage 'B'")
    _err(lambda: s[A].split(B.op.axis[0], factor=2), "placeholder")


def test_fuse_errors():
    A, B, s = _ew((2, 3, 4))
    i, j, k = B.op.axis
    _err(lambda: s[B].fuse(i, k), "adjacent", "['i0', 'i1', 'i2']")
    _err(lambda: s[B].fuse(j, i), "outermost first")
    fused = s[B].fuse(i, j)
    _err(lambda: s[B].fuse(i, k), "no longer exists", "fused into 'i0_i1_fused'")
    _err(lambda: s[B].fuse(), "no axes")
    assert s[B].leaf_iter_vars == [fused, k]


def test_fuse_mixing_data_and_reduction_rejected():
    A = te.placeholder((4, 6), name="A")
    k = te.reduce_axis((0, 6), name="k")
    B = te.compute((4,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B)
    _err(lambda: s[B].fuse(B.op.axis[0], k), "data-parallel and reduction")


def test_reorder_duplicate_and_annotated_split_rejected():
    A, B, s = _ew()
    i, j = B.op.axis
    _err(lambda: s[B].reorder(i, i), "listed twice")
    s[B].parallel(i)
    _err(lambda: s[B].split(i, factor=2), "split", "already parallel", "before annotating")


def test_inlined_stage_has_no_loops():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i], name="B")
    C = te.compute((8,), lambda i: B[i], name="C")
    s = te.create_schedule(C)
    s[B].compute_inline()
    _err(lambda: s[B].split(B.op.axis[0], factor=2), "inlined", "compute_root")
