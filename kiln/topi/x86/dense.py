"""Matrix products for the CPU: packed computes and their register-blocked schedule.

`matmul`, `dense` and `batch_matmul` here compute the same values as `kiln.topi.nn.dense`, in
three stages that `schedule_matmul` turns into a kernel at about numpy/OpenBLAS speed:

1. ``<name>_pack`` copies ``op(B)`` into column panels ``[panel, k, cols]`` (zero-padded to
   whole panels), so the kernel reads ``cols`` consecutive values per ``k``. It is computed
   once, at the root, in parallel; a B without its own batch is packed once for all batches.
2. ``<name>_acc`` accumulates ``op(A) @ panels`` over a padded ``rows x cols`` grid: rows past
   the end read the last row of A again (``min(i, n - 1)``), columns past the end multiply the
   zero padding. Nothing in the kernel is guarded, so the schedule computes each ``rows x cols``
   tile in registers: ``k`` outermost, rows unrolled, columns as explicit vectors (see
   `kiln.codegen.c_vector`), every step one broadcast of A per row and one vector load
   of the panel per vector, fused into ``rows * vectors`` FMAs.
3. the output copies the tile out (adding the bias for `dense`), guarded at the edges; element-
   wise epilogues (``relu(dense(...))``) are inlined into it by the schedule.

Tiles come from `kiln.topi.x86.cpu.matmul_tile` for the ``target`` the computes are made for
(default: the host; 6 x 16 float32 with AVX2, 6 x 64 with AVX-512), kept in the accumulation's
attrs. Loops: ``(batch, column panel, row tile)``, the first with enough iterations run in
parallel, the tile computed at the innermost, so each thread walks down one column panel (which
stays in L2) while A streams through.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kiln import te
from kiln.te import Schedule, Stage, Tensor
from kiln.tir.expr import Min, convert
from kiln.topi.generic.common import inner_points, leaf_extent
from kiln.topi.generic.graph import pad_axis, pad_axis_with_zeros
from kiln.topi.nn.dense import (
    BATCH_MATMUL,
    DENSE,
    MATMUL,
    MatmulDims,
    check_bias,
    matmul_dims,
    read_a,
)
from kiln.topi.nn.dense import batch_matmul as nn_batch_matmul
from kiln.topi.nn.dense import dense as nn_dense
from kiln.topi.nn.dense import matmul as nn_matmul
from kiln.topi.nn.dense_packed import MATMUL_PACKED, check_packed
from kiln.topi.nn.dense_packed import matmul_packed as nn_matmul_packed
from kiln.topi.tag import Pattern, attrs_for
from kiln.topi.utils import const_int
from kiln.topi.x86 import common
from kiln.topi.x86.cpu import TILE_ROWS, Tile, cpu_target, matmul_tile, panel_tile, round_up

ACC_TAG = "x86_matmul"
"""Tag of the accumulation stage (the anchor `schedule_matmul` looks for)."""


def _const_dims(dims: MatmulDims) -> tuple[int, ...] | None:
    values = [const_int(d) for d in (*dims.batch, dims.n, dims.m, dims.k)]
    return None if any(v is None for v in values) else tuple(v for v in values if v is not None)


def _pack_b(b: Tensor, dims: MatmulDims, tile: Tile, trans: bool, name: str) -> Tensor:
    m, k, cols = const_int(dims.m), dims.k, tile.cols
    assert m is not None
    panels = round_up(m, cols) // cols
    lead = dims.batch if dims.b_batch else ()

    def body(*idx: Any) -> Any:
        bi, p, kk, c = idx[: len(lead)], idx[-3], idx[-2], idx[-1]
        j = p * cols + c
        full = (*bi, j, kk) if trans else (*bi, kk, j)
        value = b[full] if dims.b_batch or not dims.batch else b[(0, *full)]
        if m % cols == 0:
            return value
        return te.if_then_else(j < m, value, convert(0.0, b.dtype) if b.dtype.is_float else 0)

    attrs = attrs_for("injective", Pattern.INJECTIVE, no_inline=True, read_order=(-1, -2))
    if not trans:
        del attrs["read_order"]
    return te.compute((*lead, panels, k, cols), body, name=f"{name}_pack", attrs=attrs)


def _accumulate(
    a: Tensor, packed: Tensor, dims: MatmulDims, tile: Tile, trans: bool, name: str
) -> Tensor:
    n = const_int(dims.n)
    if n is None:  # a symbolic row count: whole row tiles, the rows past the end clamped
        rows_p: Any = (dims.n + (tile.rows - 1)) // tile.rows * tile.rows
        last: Any = dims.n - 1
    else:
        rows_p, last = round_up(n, tile.rows), n - 1
    cols_p = packed.shape[-3] * tile.cols
    k = te.reduce_axis((0, dims.k), name="k")
    nb = len(dims.batch)

    def body(*idx: Any) -> Any:
        lead, i, j = idx[:nb], idx[nb], idx[nb + 1]
        whole = n is not None and n % tile.rows == 0
        row = i if whole else Min(i, convert(last, i.dtype) if n is not None else last)
        x = read_a(a, dims, lead, row, k, trans)
        p_lead = lead if dims.b_batch else ()
        y = packed[(*p_lead, j // tile.cols, k, j % tile.cols)]
        return te.sum(x * y, axis=k)

    attrs = attrs_for(ACC_TAG, Pattern.OUT_ELEMWISE_FUSABLE, tile=tile)
    shape = (*dims.batch, rows_p, cols_p)
    return te.compute(shape, body, name=f"{name}_acc", tag=ACC_TAG, attrs=attrs)


def _packed_product(
    op: str, a: Any, b: Any, ta: bool, tb: bool, bias: Any, name: str, target: Any
) -> Tensor | None:
    """The three-stage product, or None when a shape is symbolic (use the plain compute)."""
    dims = matmul_dims(op, a, b, ta, tb)
    if _const_dims(dims) is None:
        return None
    n, m = const_int(dims.n), const_int(dims.m)
    assert n is not None and m is not None
    tile = matmul_tile(n, m, a.dtype, cpu_target(target))
    acc = _accumulate(a, _pack_b(b, dims, tile, tb, name), dims, tile, ta, name)
    bias_t = None if bias is None else check_bias(op, bias, dims.m, a.dtype)
    nb = len(dims.batch)

    def body(*idx: Any) -> Any:
        value = acc[idx]
        return value if bias_t is None else value + bias_t[idx[nb + 1]]

    # NOTE: the copy-out is injective; the anchor graph-level fusion sees is the accumulation.
    attrs = attrs_for(op, Pattern.INJECTIVE, transpose_a=ta, transpose_b=tb)
    return te.compute((*dims.batch, dims.n, dims.m), body, name=name, tag=op, attrs=attrs)


def matmul(
    a: Any,
    b: Any,
    transpose_a: bool = False,
    transpose_b: bool = False,
    name: str = "matmul",
    target: Any = None,
) -> Tensor:
    """``op(a) @ op(b)`` as packed CPU stages tiled for ``target`` (default: the host; the
    plain compute when a shape is symbolic)."""
    out = _packed_product(MATMUL, a, b, transpose_a, transpose_b, None, name, target)
    return out if out is not None else nn_matmul(a, b, transpose_a, transpose_b, name)


def batch_matmul(
    a: Any,
    b: Any,
    transpose_a: bool = False,
    transpose_b: bool = False,
    name: str = "batch_matmul",
    target: Any = None,
) -> Tensor:
    """Batched ``op(a) @ op(b)`` as packed CPU stages tiled for ``target`` (default: the host;
    plain when a shape is symbolic)."""
    out = _packed_product(BATCH_MATMUL, a, b, transpose_a, transpose_b, None, name, target)
    return out if out is not None else nn_batch_matmul(a, b, transpose_a, transpose_b, name)


def dense(x: Any, w: Any, bias: Any = None, name: str = "dense", target: Any = None) -> Tensor:
    """``x @ w.T (+ bias)`` as packed CPU stages tiled for ``target`` (default: the host;
    plain when a shape is symbolic)."""
    out = _packed_product(DENSE, x, w, False, True, bias, name, target)
    return out if out is not None else nn_dense(x, w, bias, name)


def matmul_packed(
    x: Any, panels: Any, units: int, name: str = "matmul_packed", target: Any = None
) -> Tensor:
    """``x @ w`` for ``w`` already packed into column panels (`kiln.topi.nn.dense_packed`:
    ``[panels, K, cols]``, packed once, e.g. at compile time) as CPU stages: the accumulation
    reads the panels as they are, the copy-out drops the columns past ``units``. Tiled for
    ``target`` (default: the host) with the panels' width; symbolic leading extents (tokens,
    batch) take whole `TILE_ROWS`-row tiles, the rows past the end reading the last row again;
    the generic compute when ``x`` has rank 1."""
    x, panels, cols = check_packed(x, panels, units)
    if x.ndim == 1 or const_int(x.shape[-1]) is None:
        return nn_matmul_packed(x, panels, units, name)
    *batch, n, k = x.shape
    dims = MatmulDims(tuple(batch), n, convert(units, n.dtype), k, bool(batch), False)
    tile = panel_tile(const_int(n) or TILE_ROWS, cols, x.dtype, cpu_target(target))
    acc = _accumulate(x, panels, dims, tile, False, name)
    attrs = attrs_for(MATMUL_PACKED, Pattern.INJECTIVE)
    shape = (*batch, n, units)
    return te.compute(shape, lambda *i: acc[i], name=name, tag=MATMUL_PACKED, attrs=attrs)


# -- schedules -----------------------------------------------------------------------------------
B_IN_CACHE_BYTES = 1 << 19
"""A plain product whose ``op(B)`` is at most this big walks row tiles outermost (B stays in L2
for every row tile); a bigger one walks column panels outermost (one panel stays in cache)."""


def tile_loops(
    stage: Stage, tile: Tile, work: int | None, depth: int | None = None
) -> tuple[Any, Any, Any]:
    """Split the last two axes of ``stage`` into ``tile.rows x tile.cols`` tiles; returns the
    innermost tile loop (where a tile is computed), the unrolled row loop and the column loop.

    Column panels are outside row tiles (a packed panel then stays in cache while A streams
    through) unless there are fewer than 4 of them; the first tile loop (batch included) with
    at least 4 iterations runs in parallel when the ``work`` (multiply-adds) is worth threads.
    With a symbolic row count the row tiles run in parallel, with a run-time grain
    (`common.parallelize_tiles`; ``depth``, the multiply-adds per output element, sizes it).
    NOTE: tile loops are not fused for parallelism: TE's bound inference cannot prove a
    ``fused % n`` tile inside the tensor and would guard every access of the kernel.
    """
    *batch, i, j = stage.op.axis
    jo, ji = stage.split(j, factor=tile.cols)
    io, ii = stage.split(i, factor=tile.rows)
    m, k = const_int(j.dom.extent), depth or 1
    if const_int(i.dom.extent) is None:
        b_bytes = (m or 1 << 16) * k * 4
        order = [jo, io] if b_bytes > B_IN_CACHE_BYTES else [io, jo]
    else:
        order = [jo, io] if m is None or m >= 4 * tile.cols else [io, jo]
    stage.reorder(*batch, *order, ii, ji)
    loops = [*batch, *order]
    if work is None:
        symbolic = [a for a in loops if leaf_extent(stage, a) is None]
        axis = symbolic[0] if symbolic else common.pick_parallel(stage, loops)
        common.parallelize_tiles(stage, axis, None, inner_points(stage, axis) * k)
    elif common.worth_parallel(work):
        stage.parallel(common.pick_parallel(stage, loops))
    stage.unroll(ii)
    common.vectorize(stage, ji)
    return order[-1], ii, ji


def schedule_packed(sch: Schedule, acc: Tensor, out: Stage) -> list[Stage]:
    """Tile ``out`` (the stage reading the accumulation ``acc``) and compute ``acc`` per tile;
    returns the stages it scheduled."""
    tile: Tile = acc.op.attrs["tile"]
    work = common.work_of(acc.op)
    at, _, _ = tile_loops(out, tile, work)
    a_stage = sch[acc]
    a_stage.compute_at(out, at)
    *_, ci, cj = acc.op.axis
    a_stage.reorder(acc.op.reduce_axis[0], ci, cj)
    a_stage.unroll(ci)
    common.vectorize(a_stage, cj)
    return [out, a_stage, *common.schedule_packs(sch, acc, work)]


def schedule_plain(sch: Schedule, c: Tensor, target: Any = None) -> list[Stage]:
    """A register-tiled schedule (tile for ``target``, default the host) for the plain
    reduction of `kiln.topi.nn.dense` (correct for every shape, symbolic ones included; edges
    that do not divide the tile are guarded inside the kernel).

    When one element-wise stage reads the product (``relu(x @ w + b)``, epilogues inlined), that
    stage is tiled and the product is computed per tile into a tile-sized buffer, so product and
    epilogue are one loop nest (one parallel region, no full-size temporary); otherwise the
    product is accumulated in a local tile and copied out. A symbolic row count takes full
    `kiln.topi.x86.cpu.TILE_ROWS`-row tiles; a symbolic column count one-vector-wide tiles
    (its tail, guarded lane by lane, is then under one vector: attention scores over a symbolic
    sequence of 8 were two vectors of which one was all tail). The tile never leaves the
    (padded) domain of the product, so the accumulation has no guards: rows past the end are
    computed again from the last row (`pad_axis`), and a constant column count that is not
    whole tiles (or is narrower than one vector) reads a zero-padded copy of B
    (`pad_axis_with_zeros`; Swin's 49-key scores were stored lane by lane in every fourth
    tile); only the copy-out is guarded. Returns the stages placed.
    """
    stage = sch[c]
    *_, i, j = stage.op.axis
    n, m = (const_int(x.dom.extent) for x in (i, j))
    tile = matmul_tile(n or TILE_ROWS, m or 1 << 16, c.dtype, cpu_target(target))
    if m is None:  # NOTE: one vector per row: a symbolic width has a tail of under one vector
        tile = replace(tile, cols=tile.lanes)
    host = common.tile_host(sch, stage)
    if host is None:
        acc_t = sch.cache_write(c, "local")
        acc, out = sch[acc_t], stage
    else:
        acc_t, acc, out = c, stage, host
    placed = [out, acc]
    if n is None or n % tile.rows:
        pad_axis(sch, acc_t, -2, tile.rows)
    width = tile.lanes if m is not None and m < tile.lanes else tile.cols
    if m is not None and m % width and pad_axis_with_zeros(sch, acc_t, -1, width):
        pads = [st for st in sch.stages if st.name.endswith("_pad") and st not in placed]
        for p in pads:
            common.schedule_pack(p, None)
        placed += pads
    k = const_int(acc.op.reduce_axis[0].dom.extent)
    at, _, _ = tile_loops(out, tile, common.work_of(acc.op), k)
    acc.compute_at(out, at)
    *_, ci, cj = acc.op.axis
    acc.reorder(acc.op.reduce_axis[0], ci, cj)
    acc.unroll(ci)
    common.vectorize(acc, cj)
    return placed


MATMUL_ANY = "matmul_any"
"""The tag of `kiln.relax.op.linear_algebra.matmul_any`: the legalized ``relax.matmul`` for
symbolic shapes, broadcast batches and dtype changes (a plain reduction over the last axis)."""

PLAIN_TAGS = (MATMUL, DENSE, BATCH_MATMUL, MATMUL_ANY)


def schedule_matmul(outs: Any, target: Any = None) -> Schedule:
    """The CPU schedule of matrix products (packed ones from this module, tiled as their
    computes say; plain ones from `kiln.topi.nn.dense`, tiled for ``target``, default the host)
    with their element-wise epilogues inlined."""
    sch = common.create_with_inlined_epilogues(outs)
    for stage in list(sch.stages):
        op = stage.op
        if op.tag == ACC_TAG:
            reader = common.tile_host(sch, stage)
            if reader is not None:
                schedule_packed(sch, op.output(0), reader)
        elif op.tag in PLAIN_TAGS and getattr(op, "reduce_axis", ()) and stage.is_output:
            schedule_plain(sch, op.output(0), target)
    return sch


schedule_dense = schedule_matmul
schedule_batch_matmul = schedule_matmul
