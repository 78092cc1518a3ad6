"""The CPU schedule of pooling over channel-blocked ``NCHW{b}c`` tensors, vectorized along the
block.

A window reduction (`kiln.topi.nn.pool`, tag ``"pool"``) of rank 5 whose block is a whole
number of vectors gets register tiles of `pool_tile_width` neighbouring output pixels of one
row: loops ``(n, channel block, row, column tile)`` (fused, parallel when worth it), inside
them the window taps (``kh`` rows, then the tile's pixels, then the ``kw`` taps of a row,
unrolled) with one vector of accumulators per pixel and channel-block vector, stored once.
Every tap reads a whole vector of the block (contiguous), and its edge test (padding, or a
``ceil_mode`` window past the input; `kiln.topi.nn.pool.tap_in_input`) depends on the
pixel and tap only, so it is one scalar test per vector. An element-wise epilogue (the
average's division) hosts the tiles. Other pools (NCHW, symbolic extents, blocks that are no
whole number of vectors) get the generic reduction schedule.
"""

from __future__ import annotations

from kiln.te import ComputeOp, Schedule, Stage, Tensor
from kiln.topi.generic.common import (
    ScheduleContext,
    extent,
    fuse_all,
    inner_points,
    num_elements,
    parallelize,
)
from kiln.topi.generic.reduction import epilogue_host, point_ns
from kiln.topi.x86 import common

POOL_TILE_PIXELS = 4
"""The most output pixels of a row in one register tile. NOTE: measured (1 thread, AVX-512,
ResNet-18's 3x3 stride-2 max pool over 1x4x112x112x16): 4 pixels 68 us, 8 pixels 73 us; the
generic reduction schedule took 1000 us (two vectors of lanes over a 16-lane block, masked)."""


def pool_tile_width(ow: int) -> int:
    """Pixels of a row in one tile: the largest divisor of ``ow`` up to `POOL_TILE_PIXELS` (no
    partial tiles)."""
    return max(d for d in range(1, POOL_TILE_PIXELS + 1) if ow % d == 0)


def pool_applies(t: Tensor, ctx: ScheduleContext) -> bool:
    """Whether ``t`` is a blocked pool this schedule tiles: rank 5, constant extents after
    the batch, a block of whole vectors, and a window of constant extents."""
    op = t.op
    if not isinstance(op, ComputeOp) or len(op.axis) != 5 or len(op.reduce_axis) != 2:
        return False
    if num_elements(op.axis[1:]) is None or num_elements(op.reduce_axis) is None:
        return False
    block = extent(op.axis[-1])
    return block is not None and block % ctx.lanes(t.dtype) == 0


def schedule_pool_nchwc(sch: Schedule, t: Tensor, ctx: ScheduleContext) -> list[Stage]:
    """Tile the blocked pool ``t`` (`pool_applies`) and its epilogue host, if any (see module
    docstring); returns the stages it placed."""
    pool = sch[t]
    host = epilogue_host(sch, t, ctx)
    placed = [pool]
    if host is None:
        host, pool = pool, sch[sch.cache_write(t, "local")]
        placed.append(pool)
    else:
        placed.append(host)
    n, c, oh, ow, cb = host.op.axis
    owo, owi = host.split(ow, factor=pool_tile_width(extent(ow) or 1))
    fused = fuse_all(host, [n, c, oh, owo])
    assert fused is not None
    host.unroll(owi)
    common.vectorize(host, cb)
    op = pool.op
    assert isinstance(op, ComputeOp)
    ns = point_ns(op)
    points = num_elements(op.axis)
    parallelize(host, fused, points, ns, ns * inner_points(host, fused))
    pool.compute_at(host, fused)
    pn, pc, poh, pow_, pcb = op.axis
    rh, rw = op.reduce_axis
    pool.reorder(pn, pc, poh, rh, pow_, rw, pcb)
    pool.unroll(pow_)
    pool.unroll(rw)
    common.vectorize(pool, pcb)
    return placed
