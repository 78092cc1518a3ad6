"""compute_at / compute_inline / compute_root: placement, inferred tiles, guards, and errors."""

import pytest

from kiln import te, tir
from kiln.errors import IRError, IRValueError
from tests.te.tir_text import expr, loop_summary, show


def _lower(s, args):
    f = te.lower(s, args)
    assert tir.verify_well_formed(f) == [], show(f)
    return f


def _err(fn, *needles):
    with pytest.raises((IRError, IRValueError)) as e:
        fn()
    for n in needles:
        assert n in str(e.value), str(e.value)


def _allocs(f):
    return [n for n in tir.pre_order_nodes(f.body) if isinstance(n, tir.Allocate)]


def _chain(n=16):
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j] * tir.const(2.0), name="B")
    C = te.compute((n, n), lambda i, j: B[i, j] + tir.const(1.0), name="C")
    return A, B, C, te.create_schedule(C)


def test_compute_at_allocates_tile_inside_loop():
    A, B, C, s = _chain()
    xo, yo, xi, yi = s[C].tile(*C.op.axis, 4, 8)
    s[B].compute_at(s[C], yo)
    f = _lower(s, [A, C])
    (alloc,) = _allocs(f)
    assert [e.value for e in alloc.extents] == [4, 8]
    assert [n for n, _, _ in loop_summary(f)] == [
        "i_outer",
        "j_outer",
        "i",
        "j",
        "i_inner",
        "j_inner",
    ]
    # the tile allocation sits inside j_outer
    assert isinstance(f.body.body, tir.For) and isinstance(f.body.body.body, tir.Allocate)
    store_b = next(
        n
        for n in tir.pre_order_nodes(f.body)
        if isinstance(n, tir.BufferStore) and n.buffer.name == "B"
    )
    assert [expr(i) for i in store_b.indices] == ["i", "j"]
    assert expr(store_b.value.a.indices[0]) == "((i_outer * 4) + i)"


def test_compute_at_outer_row():
    A, B, C, s = _chain(8)
    s[B].compute_at(s[C], C.op.axis[0])
    f = _lower(s, [A, C])
    (alloc,) = _allocs(f)
    assert [e.value for e in alloc.extents] == [1, 8]
    assert loop_summary(f) == [("i_1", 8, "serial"), ("j", 8, "serial"), ("j_1", 8, "serial")]


def test_compute_at_stencil_tile_has_halo_and_guard():
    n = 20
    A = te.placeholder((n + 2,), name="A")
    P = te.compute((n + 2,), lambda i: A[i] * tir.const(2.0), name="P")
    C = te.compute((n,), lambda i: P[i] + P[i + 1] + P[i + 2], name="C")
    s = te.create_schedule(C)
    io, ii = s[C].split(C.op.axis[0], factor=8)
    s[P].compute_at(s[C], io)
    f = _lower(s, [A, C])
    (alloc,) = _allocs(f)
    assert [e.value for e in alloc.extents] == [10]
    guards = [
        expr(g.condition) for g in tir.pre_order_nodes(f.body) if isinstance(g, tir.IfThenElse)
    ]
    assert "(((i_outer * 8) + i) < 22)" in guards


def test_compute_at_non_affine_read_computes_whole_dimension():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + tir.const(1.0), name="B")
    C = te.compute((8, 8), lambda i, j: B[(i * j) % 8], name="C")
    s = te.create_schedule(C)
    s[B].compute_at(s[C], C.op.axis[0])
    f = _lower(s, [A, C])
    assert [e.value for e in _allocs(f)[0].extents] == [8]


def test_compute_inline_substitutes_body():
    A, B, C, s = _chain(4)
    s[B].compute_inline()
    f = _lower(s, [A, C])
    assert not _allocs(f)
    (store,) = [n for n in tir.pre_order_nodes(f.body) if isinstance(n, tir.BufferStore)]
    assert expr(store.value) == "((A[i, j] * 2.0) + 1.0)"


def test_compute_inline_into_reduction_and_chain():
    A = te.placeholder((4, 6), name="A")
    B = te.compute((4, 6), lambda i, j: A[i, j] * tir.const(2.0), name="B")
    D = te.compute((4, 6), lambda i, j: B[i, j] + tir.const(1.0), name="D")
    k = te.reduce_axis((0, 6), name="k")
    E = te.compute((4,), lambda i: te.sum(D[i, k], axis=k), name="E")
    s = te.create_schedule(E)
    s[B].compute_inline()
    s[D].compute_inline()
    f = _lower(s, [A, E])
    assert not _allocs(f)
    assert "A[i, k]" in show(f)


def test_compute_root_undoes_placement():
    A, B, C, s = _chain(4)
    s[B].compute_inline()
    s[B].compute_root()
    f = _lower(s, [A, C])
    assert len(_allocs(f)) == 1 and isinstance(f.body, tir.Allocate)


def test_compute_at_to_non_consumer_rejected():
    A, B, C, s = _chain()
    D = te.placeholder((16,), name="D")
    E = te.compute((16,), lambda i: D[i], name="E")
    s2 = te.create_schedule([C, E])
    _err(lambda: s2[B].compute_at(s2[E], E.op.axis[0]), "stage 'E' does not read 'B'")
    _err(lambda: s[B].compute_at(s[A], C.op.axis[0]), "placeholder")


def test_compute_at_other_errors():
    A, B, C, s = _chain()
    _err(lambda: s[C].compute_at(s[B], B.op.axis[0]), "output")
    _err(lambda: s[B].compute_at(s[B], B.op.axis[0]), "its own loops")
    _err(lambda: s[B].compute_at(s[C], B.op.axis[0]), "belongs to stage 'B', not 'C'")
    _err(lambda: s[B].compute_at(C, C.op.reduce_axis), "expected an axis")
    io, ii = s[C].split(C.op.axis[0], factor=2)
    _err(lambda: s[B].compute_at(s[C], C.op.axis[0]), "no longer exists")
    _err(lambda: s[B].compute_at("C", io), "consumer's stage")


def test_compute_at_with_second_reader_rejected():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + tir.const(1.0), name="B")
    C = te.compute((8,), lambda i: B[i] * tir.const(2.0), name="C")
    D = te.compute((8,), lambda i: B[i] * tir.const(3.0), name="D")
    s = te.create_schedule([C, D])
    _err(lambda: s[B].compute_at(s[C], C.op.axis[0]), "also read by ['D']")


def test_compute_at_through_inlined_reader():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + tir.const(1.0), name="B")
    M = te.compute((8,), lambda i: B[i] * tir.const(2.0), name="M")
    C = te.compute((8,), lambda i: M[i] - tir.const(1.0), name="C")
    s = te.create_schedule(C)
    s[M].compute_inline()
    s[B].compute_at(s[C], C.op.axis[0])
    f = _lower(s, [A, C])
    assert len(_allocs(f)) == 1
    # un-inlining M afterwards makes C a non-reader: reported at lowering
    s[M].compute_root()
    _err(lambda: te.lower(s, [A, C]), "compute_at", "'C' no longer reads 'B'")


def test_compute_at_cycle_rejected():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + tir.const(1.0), name="B")
    C = te.compute((8,), lambda i: B[i] * tir.const(2.0), name="C")
    D = te.compute((8,), lambda i: C[i] * tir.const(3.0), name="D")
    s = te.create_schedule(D)
    s[C].compute_at(s[D], D.op.axis[0])
    s[B].compute_at(s[C], C.op.axis[0])
    assert len(_allocs(_lower(s, [A, D]))) == 2


def test_compute_inline_errors():
    A = te.placeholder((4, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    R = te.compute((4,), lambda i: te.sum(A[i, k], axis=k), name="R")
    B = te.compute((4,), lambda i: R[i] + tir.const(1.0), name="B")
    C = te.compute((4,), lambda i: B[i] * tir.const(2.0), name="C")
    s = te.create_schedule(C)
    _err(lambda: s[R].compute_inline(), "'R' is a reduction")
    _err(lambda: s[C].compute_inline(), "'C' is an output")
    _err(lambda: s[A].compute_inline(), "placeholder")
    s[B].split(B.op.axis[0], factor=2)
    _err(lambda: s[B].compute_inline(), "loop transformations")


def test_compute_inline_of_host_rejected():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + tir.const(1.0), name="B")
    M = te.compute((4,), lambda i: B[i] * tir.const(2.0), name="M")
    C = te.compute((4,), lambda i: M[i], name="C")
    s = te.create_schedule(C)
    s[B].compute_at(s[M], M.op.axis[0])
    _err(lambda: s[M].compute_inline(), "['B'] are computed at 'M'")
    _err(lambda: s[B].compute_at(s[C], C.op.axis[0]), "does not read 'B'")


def test_argument_tensor_cannot_be_placed():
    A, B, C, s = _chain(4)
    s[B].compute_inline()
    _err(lambda: te.lower(s, [A, B, C]), "'B' is an argument", "inlined")


def _normalized_rows(n=6, m=20):
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * tir.const(2.0), name="B")
    k = te.reduce_axis((0, m), name="k")
    S = te.compute((n,), lambda i: te.sum(B[i, k], axis=k), name="S")
    C = te.compute((n, m), lambda i, j: B[i, j] / S[i], name="C")
    return A, B, S, C, te.create_schedule(C)


def test_compute_at_with_a_second_reader_nested_in_the_same_loop():
    """B is read by C and by S, which runs inside C's row loop: B can live there, one row."""
    import numpy as np

    import kiln

    A, B, S, C, s = _normalized_rows()
    s[S].compute_at(s[C], C.op.axis[0])
    s[B].compute_at(s[C], C.op.axis[0])
    f = _lower(s, [A, C])
    assert sorted(tuple(e.value for e in a.extents) for a in _allocs(f)) == [(1,), (1, 20)]
    a = np.random.default_rng(0).random((6, 20)).astype("float32") + 0.5
    out = np.zeros_like(a)
    kiln.build(f)["main"](a, out)
    np.testing.assert_allclose(out, a / a.sum(1, keepdims=True), rtol=1e-5)


def test_compute_at_rejects_a_second_reader_outside_the_loop():
    A, B, S, C, s = _normalized_rows()
    s[S].compute_at(s[C], C.op.axis[0])
    _err(lambda: s[B].compute_at(s[C], C.op.axis[1]), "also read by ['S']")
    A, B, S, C, s = _normalized_rows()
    _err(lambda: s[B].compute_at(s[C], C.op.axis[0]), "also read by ['S']")  # S at the root
    s[S].compute_at(s[C], C.op.axis[0])
    s[B].compute_at(s[C], C.op.axis[0])
    s[S].compute_root()  # checked again when lowering
    _err(lambda: _lower(s, [A, C]), "also read by ['S']")


def test_compute_at_a_host_whose_loop_holds_every_reader():
    """B is read by C and D, both computed inside E's row loop: B goes to that loop too, one
    row at a time, though E itself does not read it."""
    import numpy as np

    import kiln

    A = te.placeholder((8, 16), name="A")
    B = te.compute((8, 16), lambda i, j: A[i, j] * tir.const(2.0), name="B")
    C = te.compute((8, 16), lambda i, j: B[i, j] + tir.const(1.0), name="C")
    D = te.compute((8, 16), lambda i, j: B[i, 15 - j] * tir.const(3.0), name="D")
    E = te.compute((8, 16), lambda i, j: C[i, j] - D[i, j], name="E")
    s = te.create_schedule(E)
    _err(lambda: s[B].compute_at(s[E], E.op.axis[0]), "does not read 'B'")  # C, D at the root
    s[C].compute_at(s[E], E.op.axis[0])
    s[D].compute_at(s[E], E.op.axis[0])
    s[B].compute_at(s[E], E.op.axis[0])
    f = _lower(s, [A, E])
    assert sorted(int(a.extents[-1].value) for a in _allocs(f)) == [16, 16, 16]
    a = np.random.default_rng(0).standard_normal((8, 16)).astype("float32")
    out = np.zeros((8, 16), "float32")
    kiln.build(f)["main"](a, out)
    np.testing.assert_allclose(out, (2 * a + 1) - 6 * a[:, ::-1], rtol=1e-6)
