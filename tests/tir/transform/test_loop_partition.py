"""LoopPartition: annotated loops split where their conditions change; Simplify then decides
each piece's conditions. Checked on the IR and on compiled code against numpy."""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest

import kiln
from kiln import te, tir
from kiln.ir import GlobalVar, IRModule
from kiln.ir.visitor import pre_order_nodes
from kiln.tir.expr import EQ, GE, GT, LE, LT, NE
from kiln.tir.transform import LoopPartition, Simplify
from kiln.tir.transform.loop_partition import GUARD, PARTITION, cut_points

ITE = kiln.tir.op.if_then_else


def _pad_func(kind: tir.ForKind = tir.ForKind.SERIAL, partition: bool = True) -> tir.PrimFunc:
    """``B[x] = A[x - 2] if 2 <= x < 10 else 0`` over ``x in [0, 13)``, with an inner loop
    that defines a variable (so a copied piece must renew it)."""
    A = tir.decl_buffer((8,), "float32", "A")
    B = tir.decl_buffer((13, 2), "float32", "B")
    x, j = tir.Var("x"), tir.Var("j")
    value = ITE((x >= 2) & (x < 10), A[x - 2] + tir.Cast("float32", j), tir.const(0.0))
    inner = tir.For(j, 0, 2, tir.ForKind.SERIAL, tir.BufferStore(B, value, (x, j)))
    notes = {PARTITION: 1} if partition else {}
    body = tir.For(x, 0, 13, kind, inner, annotations=notes)
    params = (tir.Var("A", "handle"), tir.Var("B", "handle"))
    return tir.PrimFunc(params, body, buffer_map=dict(zip(params, (A, B))))


def _run(func: tir.PrimFunc) -> tir.PrimFunc:
    mod = IRModule({GlobalVar("f"): func})
    mod = Simplify()(LoopPartition()(mod))
    tir.verify_well_formed(mod)
    return mod["f"]  # type: ignore[return-value]


def _loops(stmt: tir.Stmt) -> list[tir.For]:
    items = stmt.seq if isinstance(stmt, tir.SeqStmt) else (stmt,)
    return [s for s in items if isinstance(s, tir.For)]


def test_a_padding_loop_splits_into_fill_copy_fill() -> None:
    out = _run(_pad_func())
    loops = _loops(out.body)
    assert [(int(f.min.value), int(f.extent.value)) for f in loops] == [(0, 2), (2, 8), (10, 3)]
    assert all(PARTITION not in f.annotations for f in loops)
    text = str(out)
    assert "if_then_else" not in text  # every piece's condition is decided
    assert len({f.body.loop_var for f in loops}) == 3  # the inner loop variable is renewed


def _concat_func(k: int) -> tir.PrimFunc:
    """``B[x] = A0[x] if x < 4 else A1[x - 4] if x < 8 else ...``: a concat of ``k`` inputs of 4
    as a chain of ``if_then_else``, the loop annotated for the split."""
    inputs = [tir.decl_buffer((4,), "float32", f"A{i}") for i in range(k)]
    out = tir.decl_buffer((4 * k,), "float32", "B")
    x = tir.Var("x")
    value = inputs[-1][x - 4 * (k - 1)]
    for i in reversed(range(k - 1)):
        value = ITE(x < 4 * (i + 1), inputs[i][x - 4 * i], value)
    body = tir.For(x, 0, 4 * k, tir.ForKind.SERIAL, tir.BufferStore(out, value, (x,)),
                   annotations={PARTITION: 1})  # fmt: skip
    params = tuple(tir.Var(b.name, "handle") for b in (*inputs, out))
    return tir.PrimFunc(params, body, buffer_map=dict(zip(params, (*inputs, out))))


def test_each_piece_keeps_only_its_own_branch_before_simplify() -> None:
    mod = LoopPartition()(IRModule({GlobalVar("f"): _concat_func(6)}))
    loops = _loops(mod["f"].body)
    assert len(loops) == 6
    for i, loop in enumerate(loops):
        reads = {n.buffer.name for n in pre_order_nodes(loop) if isinstance(n, tir.BufferLoad)}
        assert reads == {f"A{i}"}, (i, reads)
        assert "if_then_else" not in str(loop)


def test_the_split_loop_computes_what_the_original_did() -> None:
    a = np.arange(1, 9, dtype="float32")
    want = np.zeros((13, 2), "float32")
    want[2:10] = a[:, None] + np.arange(2, dtype="float32")[None, :]
    for func in (_pad_func(), _pad_func(partition=False)):
        built = kiln.build(func.with_attr("global_symbol", "f"), target="c")
        b = np.full((13, 2), 7.0, "float32")
        built["f"](a, b)
        np.testing.assert_array_equal(b, want)


def test_loops_without_the_annotation_are_left_as_they_are() -> None:
    func = _pad_func(partition=False)
    mod = IRModule({GlobalVar("f"): func})
    assert LoopPartition()(mod)["f"] is func


def test_a_parallel_loop_is_unswitched_on_its_widest_piece() -> None:
    out = _run(_pad_func(tir.ForKind.PARALLEL))
    loop = out.body
    assert isinstance(loop, tir.For) and loop.kind == tir.ForKind.PARALLEL
    assert PARTITION not in loop.annotations
    branch = loop.body
    assert isinstance(branch, tir.IfThenElse)
    assert "if_then_else" not in str(branch.then_case)  # decided for x in [2, 10)
    assert "if_then_else" in str(branch.else_case)


def test_the_unswitched_loop_computes_what_the_original_did() -> None:
    a = np.arange(1, 9, dtype="float32")
    want = np.zeros((13, 2), "float32")
    want[2:10] = a[:, None] + np.arange(2, dtype="float32")[None, :]
    func = _pad_func(tir.ForKind.PARALLEL).with_attr("global_symbol", "f")
    b = np.full((13, 2), 7.0, "float32")
    kiln.build(func, target="c")["f"](a, b)
    np.testing.assert_array_equal(b, want)


@pytest.mark.parametrize(
    ("op", "k", "c", "cuts"),
    [
        (LT, 1, -5, [5]),  # x - 5 < 0: true below 5
        (GE, 1, -5, [5]),
        (LE, 1, -5, [6]),  # x <= 5: true up to 5
        (GT, 1, -5, [6]),
        (LT, 3, -10, [4]),  # 3x < 10: x <= 3
        (LE, 3, -10, [4]),
        (LT, -2, 9, [5]),  # 9 - 2x < 0: x >= 5
        (EQ, 2, -8, [4, 5]),
        (NE, 2, -7, []),  # 2x == 7 never holds
    ],
)
def test_cut_points_of_linear_comparisons(op: type, k: int, c: int, cuts: list[int]) -> None:
    x = tir.Var("x")
    A = tir.decl_buffer((20,), "float32", "A")
    cond = op(x * k + c, tir.const(0)) if k != 1 else op(x + c, tir.const(0))
    body = tir.BufferStore(A, ITE(cond, tir.const(1.0), tir.const(0.0)), (x,))
    assert cut_points(x, body, 0, 20) == cuts
    ends = [0, *cuts, 20]
    for lo, hi in zip(ends, ends[1:]):  # each piece sees the comparison constant
        assert len({_holds(op, k * v + c) for v in range(lo, hi)}) == 1


def _holds(op: type, d: int) -> bool:
    return {LT: d < 0, LE: d <= 0, GT: d > 0, GE: d >= 0, EQ: d == 0, NE: d != 0}[op]


def test_conditions_on_other_variables_give_no_cuts() -> None:
    x, y = tir.Var("x"), tir.Var("y")
    A = tir.decl_buffer((20,), "float32", "A")
    body = tir.BufferStore(A, ITE(x < y, tir.const(1.0), tir.const(0.0)), (x,))
    assert cut_points(x, body, 0, 20) == []


@pytest.mark.parametrize("shape", [(1, 3, 64, 64, 1), (1, 2, 30, 30, 8)])
def test_a_padded_conv_matches_numpy(
    shape: tuple[int, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The channel-blocked conv reads its padding in place: its tile loops are partitioned
    into border tiles (guarded reads) and the others (plain reads); it still matches.
    NOTE: dense convs read in place only with AVX-512's registers (`IN_PLACE_REGISTERS`);
    this test is about the partition, so it asks for the in-place form on any host."""
    from kiln.topi import x86
    from kiln.topi.layout import transform_array

    module = sys.modules["kiln.topi.x86.conv2d_nchwc"]  # the package exports the function
    monkeypatch.setattr(module, "IN_PLACE_REGISTERS", 0)

    n, cblocks, h, w, cb = shape
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, cblocks * cb, h, w), dtype="float32")
    wt = rng.standard_normal((16, cblocks * cb, 3, 3), dtype="float32")
    xb = transform_array(x, "NCHW", f"NCHW{cb}c")
    wb = transform_array(wt, "OIHW", f"OIHW{cb}i16o")
    xt, kt = te.placeholder(xb.shape, name="x"), te.placeholder(wb.shape, name="w")
    yt = x86.conv2d_nchwc(xt, kt, 1, 1, 1, 1, target="c")
    built = kiln.build(te.lower(x86.schedule_conv2d_nchwc(yt, "c"), [xt, kt, yt]), target="c")
    # NOTE: the weight vectors are 16 floats with AVX-512 and 8 with AVX2
    fma = re.compile(r"\* \(\*\(kiln_float32x(8|16)_u\*\)\(w_data")
    fmas = [ln for ln in built.inspect_source().splitlines() if fma.search(ln)]
    assert any("? x_data[" in ln for ln in fmas)  # tiles at the border guard their reads
    assert any("? x_data[" not in ln for ln in fmas)  # the others read in place
    out = np.zeros([d.value for d in yt.shape], "float32")
    built["main"](xb, wb, out)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
    ref = np.einsum("nchwij,ocij->nohw", win, wt)
    np.testing.assert_allclose(out, transform_array(ref, "NCHW", "NCHW16c"), rtol=1e-4, atol=1e-4)


def _tiled_func(rows: int, tw: int = 4, guard: bool = True) -> tir.PrimFunc:
    """A "tiled" padded read over a ``rows x 12`` grid, ``B[yo, xo*tw + xi] = A[yo - 1, x - 1]``
    guarded on both axes, with ``yo`` and ``xo`` as `GUARD` loops."""
    A = tir.decl_buffer((rows, 12), "float32", "A")
    B = tir.decl_buffer((rows, 12), "float32", "B")
    yo, xo, xi = tir.Var("yo"), tir.Var("xo"), tir.Var("xi")
    y, x = yo - 1, xo * tw + xi - 1
    inside = (y >= 0) & (y < rows) & (x >= 0) & (x < 12)
    value = ITE(inside, A[y, x], tir.const(0.0))
    store = tir.BufferStore(B, value, (yo, xo * tw + xi))
    inner = tir.For(xi, 0, tw, tir.ForKind.SERIAL, store)
    notes = {PARTITION: GUARD} if guard else {}
    body = tir.For(xo, 0, 12 // tw, tir.ForKind.SERIAL, inner, annotations=notes)
    body = tir.For(yo, 0, rows, tir.ForKind.PARALLEL, body, annotations=notes)
    params = (tir.Var("A", "handle"), tir.Var("B", "handle"))
    return tir.PrimFunc(params, body, buffer_map=dict(zip(params, (A, B))))


def test_nested_guard_loops_unswitch_once_on_all_their_interiors() -> None:
    out = _run(_tiled_func(6))
    branches = [n for n in pre_order_nodes(out.body) if isinstance(n, tir.IfThenElse)]
    assert len(branches) == 1  # two copies of the tile, not one per piece of each loop
    cond = str(branches[0].condition)
    assert "yo" in cond and "xo" in cond  # the interiors of both loops
    assert "if_then_else" not in str(branches[0].then_case)
    a = np.arange(72, dtype="float32").reshape(6, 12)
    want = np.zeros((6, 12), "float32")
    want[1:, 1:] = a[:-1, :-1]
    for func in (_tiled_func(6), _tiled_func(6, guard=False), _tiled_func(6, tw=12)):
        b = np.full((6, 12), 5.0, "float32")
        kiln.build(func.with_attr("global_symbol", "f"), target="c")["f"](a, b)
        np.testing.assert_array_equal(b, want)


def test_no_copy_when_a_guard_loop_has_no_interior() -> None:
    """A tile as wide as the row reads past both ends: no tile is plain, nothing is copied."""
    out = _run(_tiled_func(6, tw=12))
    assert not any(isinstance(n, tir.IfThenElse) for n in pre_order_nodes(out.body))
    assert "pragma_loop_partition" not in str(out)


def _tail_func(step: int = 8) -> tir.PrimFunc:
    """``B[ko*8 + l] = A[ko*8 + l] * 2`` over ``ko in [0, ceil(n / 8))``, ``l in [0, 8)``, guarded
    by ``ko*8 + l < n``: the split of a symbolic extent by a constant, as TE lowers it."""
    n = tir.SizeVar("n", "int64")
    A, B = tir.decl_buffer((n,), "float32", "A"), tir.decl_buffer((n,), "float32", "B")
    ko, lane = tir.Var("ko", "int64"), tir.Var("l", "int64")
    at = ko * step + lane
    guard = tir.IfThenElse(at < n, tir.BufferStore(B, A[at] * tir.const(2.0), (at,)))
    zero, width = tir.const(0, "int64"), tir.const(step, "int64")
    inner = tir.For(lane, zero, width, tir.ForKind.SERIAL, guard)
    body = tir.For(ko, zero, tir.FloorDiv(n + (step - 1), width), tir.ForKind.SERIAL, inner)
    params = (tir.Var("A", "handle"), tir.Var("B", "handle"))
    return tir.PrimFunc(params, body, buffer_map=dict(zip(params, (A, B))))


def test_a_symbolic_tail_guard_leaves_the_whole_steps_unguarded() -> None:
    """No annotation needed: the main loop runs the steps every lane of which is inside
    (``ko < n // 8``) with no guard, the rest keeps it; both compute what the original did."""
    out = _run(_tail_func())
    main, tail = _loops(out.body)
    assert not any(isinstance(n, tir.IfThenElse) for n in pre_order_nodes(main))
    assert any(isinstance(n, tir.IfThenElse) for n in pre_order_nodes(tail))
    built = kiln.build(_tail_func().with_attr("global_symbol", "f"), target="c")
    for n in (0, 1, 7, 8, 13, 16, 17):
        a = np.arange(n, dtype="float32")
        b = np.full(n, -1.0, "float32")
        built["f"](a, b)
        np.testing.assert_array_equal(b, a * 2)
