"""Channel-blocked 2-D convolution for the CPU: padded computes and a register-tiled schedule.

`conv2d_nchwc` computes the values of `kiln.topi.nn.conv2d_nchwc.conv2d_nchwc` (``NCHW{cb}c``
data, ``OIHW{cb}i{ob}o`` filters, ``NCHW{ob}c`` output; the graph level picks these layouts,
see `kiln.relax.transform.AlterOpLayout`) in three stages:

1. the padded input: read in place where most output tiles lie inside the input
   (`MIN_PLAIN_TILES`; reads at the border are guarded, and `LoopPartition` gives the other
   tiles a copy of the tile without guards), else ``<name>_pad``, a zero-padded copy, also past
   the bottom/right edge far enough that padded output tiles read only memory that exists
   (skipped when nothing needs padding);
2. ``<name>_acc`` accumulates over a ``(th rows x tw columns)``-padded output grid;
3. the output copies each tile out (guarded at the edges); element-wise epilogues are inlined.

The register tile (`nchwc_tile`) is ``th x tw`` output pixels by one block of ``ob`` output
channels (``ob / lanes`` vectors). Each step of the (input block, ky, kx, channel in block)
reduction loads the block's filter taps as vectors, broadcasts one input value per pixel and
issues ``pixels * vectors`` FMAs into accumulators that stay in registers. The vectors run
along output channels, so the input is only ever read one value at a time: a strided or
dilated convolution reads its inputs the same way as a dense one (no gathers). Where registers
allow (AVX-512), a row of filter taps is unrolled inside the step (`NchwcTile.taps`): the
pixels of a tile row then share the broadcast input values of neighbouring taps.

Depthwise convolutions (``groups == C == O``, ``ob == cb``) have no channel reduction: each
step loads one input vector per pixel (the channel block) and one filter vector, so they are
vectorized along the channel block too. Grouped convolutions use the dense kernel when their
blocks lie inside one group (``ob`` divides ``O_g``, ``cb`` divides ``C_g``); other blockings
get the generic compute.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kiln import te
from kiln.ir.target import Target
from kiln.te import Schedule, Stage, Tensor
from kiln.tir.expr import const_product, convert
from kiln.tir.transform.loop_partition import GUARD, SPLIT
from kiln.topi.generic import common as generic
from kiln.topi.nn.conv2d_nchwc import CONV2D_NCHWC, BlockedConv, blocked_conv
from kiln.topi.nn.conv2d_nchwc import conv2d_nchwc as nn_conv2d_nchwc
from kiln.topi.schedule import schedule_for
from kiln.topi.tag import Pattern, attrs_for
from kiln.topi.utils import const_int
from kiln.topi.x86 import common
from kiln.topi.x86.cpu import cpu_target, lanes, round_up

ACC_TAG = "x86_conv2d_nchwc"
"""Tag of the accumulation stage (the anchor the schedule looks for)."""

FILTERS_IN_L2 = 512 * 1024
"""Filters of at most this many bytes (all output blocks) are read from L2 by every spatial
tile: the tile loops over the channel blocks innermost (`NchwcTile.blocks_inner`)."""


TAPS_FILTER_BYTES = 256 * 1024
"""A row of filter taps is unrolled only when one output block's filters (``C * kh * kw * ob``
values) take at most this many bytes. NOTE: the unrolled taps read three filter rows 4 KB apart
per input channel instead of one contiguous row; measured (1 thread, thread CPU time, AVX-512,
``conv_peak.py --resnet18`` shapes, tiles forced): ResNet-18's layer-4 3x3 (7x7 outputs, 590 KB
per block) 91-95 GFLOP/s unrolled (1x7 tile) vs 99-101 not; its 3x3 stride 2 into layer 4
(295 KB) 93 vs 96-99; layer 3's 3x3 (295 KB) 105 vs 108; layers 1-2 (73-147 KB) the same
within noise either way."""

DEPTHWISE_MAC_COST = 2
"""A depthwise multiply-add costs about twice a dense one (`common.NS_PER_MAC`) in the thread
rule: each FMA loads its own input vector instead of sharing a broadcast with a tile's filter
vectors. Measured (1 thread, AVX-512): 1x32x32x32 3x3 depthwise, 295K multiply-adds, 10.8 us
without its padding copy (0.037 ns each); the dense kernels take 0.017-0.02 ns."""

MIN_PLAIN_TILES = 0.4
"""A padded convolution may read its input in place (no padded copy) when at least this share
of its output tiles read only inside the input: those run without guards (`LoopPartition`
unswitches the tile loops), the tiles at the border guard each read. Below it (a tile as wide as
the output: no tile is plain) the kernel reads a zero-padded copy. Measured (1 thread, AVX-512,
in place vs copy): the small CNN's convs (47-65% plain) 1.03-1.15x faster, the model 5% faster
on 1 thread and 10-20% on 2 (its copies ran on one thread); ResNet-18's 7x7 convs (none plain)
0.85-0.90x in the model."""

IN_PLACE_REGISTERS = 32
"""A dense (not depthwise) convolution reads its input in place only on a CPU with this many
vector registers (AVX-512). Measured on an AVX2 Zen 3 (16 registers, 1 thread, `kiln profile`
medians of 300 calls): the small CNN's two 16-channel 3x3 convs at 32x32 took 137-140 us each in
place and 52-53 us reading the padded copy (the model 321 -> 186 us); its depthwise conv took
15-23 us in place and 27 us with the copy, so depthwise convolutions decide by the shares
below on every CPU."""

MIN_COPY_SHARE = 0.03
"""...and when the padded copy would take at least this share of the convolution's time (an
element copied costing `generic.NS_PER_ELEMENT`, a multiply-add `common.NS_PER_MAC`): reading
in place doubles the kernel's code (two copies of the tile), so a convolution whose copy is a
small part of it keeps the copy. Measured: ResNet-18's convs (copy shares 1.3-2%) in place
1.01-1.03x faster on their own, the same within noise in the model at 1 and 2 threads, but its
cold compile took 4.9-6.6 s instead of 4.1-4.8; the small CNN's (4-130%) are the ones above."""

UNROLL_BLOCK_REGISTERS = 16
"""On a CPU with this many vector registers (AVX2), a dense tile with one tap may unroll its
loop over an input channel block (`NchwcTile.unrolled_block`) when its accumulators, its filter
vectors and `UNROLLED_SPARE` registers fit (the C compile disables GCC's predictive commoning,
which otherwise carries inputs across the unrolled steps in registers and spills the
accumulators). Measured (Zen 3, 1 thread, medians of 25 interleaved calls, GFLOP/s),
ResNet-50's convolutions at 56x56 to 14x14: 1x5 tiles unrolled 57-77 against 2x3 tiles in a
loop 47-75 (1x1 convolutions with 256-1024 input channels +16-28%), 2x3 unrolled 55-75 (but
one or two accumulators spilled); fewer than `MIN_ACCUMULATORS` (1x4, 2x2) 36-48.
NOTE: AVX-512 (32 registers, tiles of 14-28 accumulators) is not measured and keeps the loop."""

UNROLLED_SPARE = 3
"""Registers an unrolled tile leaves free besides its accumulators and filter vectors: GCC
loads the next steps' broadcasts early (with two spare, 2x3 tiles spilled accumulators)."""

MIN_UNROLLED_PIXELS = 6
"""A row of filter taps is unrolled (`NchwcTile.taps`) when the tile may still hold this many
pixels beside the taps' filter vectors."""


@dataclass(frozen=True)
class NchwcTile:
    """A register tile: ``th x tw`` output pixels by ``vectors`` vectors of output channels,
    with ``taps`` filter taps of a row unrolled (1: none)."""

    th: int
    tw: int
    vectors: int
    blocks_inner: bool = False
    """Loop over the output channel blocks inside the spatial tiles (see `schedule_packed`)."""
    taps: int = 1
    unrolled_block: bool = False
    """Unroll the reduction over an input channel block (see `UNROLL_BLOCK_REGISTERS`)."""
    band: int = 0
    """With ``blocks_inner``: row tiles per band (0: no bands; see `BAND_BYTES`)."""

    @property
    def pixels(self) -> int:
        return self.th * self.tw


def max_pixels(target: Target, vectors: int, taps: int = 1, memory_filters: bool = False) -> int:
    """Pixels a tile of ``vectors`` vectors per pixel may hold on ``target`` with ``taps`` taps
    unrolled: one register per accumulator, ``taps`` per filter vector, and spare ones for the
    broadcast input values (two for one tap, four with several in flight). With
    ``memory_filters`` (one tap, a dense convolution) as few as one filter vector may stay in a
    register beside one broadcast: the FMAs read the others from memory (`_step_cost` counts
    what that costs)."""
    regs = target.cpu.vector_registers
    if memory_filters:
        return max(1, (regs - 2) // vectors)
    return max(1, (regs - taps * vectors - 2 * min(taps, 2)) // vectors)


MIN_ACCUMULATORS = 10
"""A step of the reduction takes at least this many FMA slots: with fewer accumulators the FMA
units wait for their own results (4 cycles' latency, 2 FMAs a cycle). Measured (AVX2 Zen 3, 1
thread, `conv_peak.py --resnet50` shapes, tiles forced): ResNet-50's 7x7 convs 29-38 GFLOP/s
with 1x4 tiles (8 accumulators) against 53-67 with 1x7 (14)."""


MEMORY_FMA_COST = 1.3
"""FMA slots of an FMA that reads its filter vector from memory (`_step_cost`). Measured (AVX2
Zen 3, 1 thread, medians of 25 interleaved calls, ResNet-50's convolutions): 1x7 tiles (half
their FMAs read memory) against 2x3 (none) where the two tie without this: 0.85-0.99x at 14x14
outputs with 256-1024 input channels, 0.89-0.95x at 28x28."""


def _step_cost(pixels: int, vectors: int, regs: int, unrolled: bool = False) -> float | None:
    """FMA slots of one reduction step of a ``pixels x vectors`` tile with one tap (None: it
    does not fit ``regs`` registers): its FMAs, those reading a filter vector that has no
    register left (once per pixel) at `MEMORY_FMA_COST`, or its loads (the broadcast inputs
    and the filter vectors held, once per step) where they are more, at least
    `MIN_ACCUMULATORS`; plus two for the loop unless ``unrolled`` (which needs every filter
    vector and `UNROLLED_SPARE` registers beside the accumulators)."""
    acc = pixels * vectors
    if unrolled and acc + vectors + UNROLLED_SPARE > regs:
        return None
    held = min(vectors, regs - acc - 1)
    if held < 1:
        return None
    from_memory = (vectors - held) * pixels
    loads = pixels + held + from_memory
    fmas = acc + (MEMORY_FMA_COST - 1) * from_memory
    return max(fmas, loads, MIN_ACCUMULATORS) + (0 if unrolled else 2)


def nchwc_tile(
    oh: int, ow: int, ob: int, dtype: Any, target: Target, kw: int = 1, depthwise: bool = False
) -> NchwcTile:
    """The tile for an ``oh x ow`` output with ``ob``-channel blocks and ``kw`` taps per filter
    row on ``target``: the row of taps unrolled when at least `MIN_UNROLLED_PIXELS` still fit
    beside their filter vectors (neighbouring pixels then share their broadcast inputs); of the
    ``th x tw`` shapes that fit in registers (each also with its input block's loop unrolled,
    where `UNROLL_BLOCK_REGISTERS` allows), the one with the least work per output pixel,
    counting the padding of the last tiles and a step's FMAs and loads (`_step_cost`; with
    taps unrolled or ``depthwise``, a filter load per vector) (smaller ``th``, then ``tw``,
    on ties).
    NOTE: with 16 registers (AVX2) and two vectors per pixel, 7x7 outputs take 1x7 tiles (one
    filter vector read from memory) instead of 1x4 (both in registers, 8 accumulators):
    measured (1 thread, Zen 3, medians of 25 interleaved calls) ResNet-50's convolutions with
    7x7 outputs 26-34 -> 53-70 GFLOP/s, 2.0x each."""
    width = lanes(target, dtype)
    vectors = -(-ob // width)
    taps = kw if kw > 1 and max_pixels(target, vectors, kw) >= MIN_UNROLLED_PIXELS else 1
    memory_filters = taps == 1 and not depthwise
    most = max_pixels(target, vectors, taps, memory_filters)
    regs = target.cpu.vector_registers
    unrolls = (False, True) if memory_filters and regs == UNROLL_BLOCK_REGISTERS else (False,)

    def cost(choice: tuple[int, int, bool]) -> tuple[float, int, int]:
        th, tw, unrolled = choice
        tiles = round_up(oh, th) * round_up(ow, tw) / (th * tw)
        step = _step_cost(th * tw, vectors, regs, unrolled) if memory_filters else None
        if step is None:
            step = float("inf") if unrolled else th * tw * vectors + vectors + 2
        return tiles * step, th, tw

    shapes = [(th, tw) for th in range(1, min(oh, most) + 1) for tw in range(1, most // th + 1)]
    th, tw, unrolled = min(((*shape, u) for shape in shapes for u in unrolls), key=cost)
    return NchwcTile(th, min(tw, ow), vectors, taps=taps, unrolled_block=unrolled)


BAND_BYTES = 64 * 1024
"""A convolution with `NchwcTile.blocks_inner` and at least `BAND_MIN_BLOCKS` output channel
blocks groups its row tiles into bands whose input rows take about this many bytes, and runs
(band, block) in parallel, then the band's tiles (`schedule_packed`). Without bands every tile
writes all blocks' outputs (and reads their residuals), 16-32 streams a channel block's plane
apart, more than the hardware prefetchers follow; with them a block writes one band's rows in
order while the band's input stays in L2. Measured (Zen 3, `kiln profile` medians of 9-21
interleaved calls of two builds of ResNet-50): its 64->256 1x1 convolutions at 56x56 with a
residual add 2.3 -> 1.6 ms on 1 thread (44.6 -> 67 GFLOP/s), 0.86x the time on 2 threads;
bands of 32 or 256 KB measured the same as 64, 16 KB slower."""

BAND_MIN_BLOCKS = 8
"""Fewer output channel blocks keep one band (few streams: ResNet-50's 3x3 64->64 at 56x56
measured 0.95-1.14x the time with bands)."""


def band_rows(d: Any, tile: NchwcTile, ob: int, itemsize: int) -> int:
    """Row tiles per band of a ``blocks_inner`` convolution (0: one band), see `BAND_BYTES`."""
    row_tiles = -(-d.oh // tile.th)
    if d.o // ob < BAND_MIN_BLOCKS:
        return 0
    tile_row_bytes = d.w * d.c * itemsize * tile.th * d.stride[0]
    band = max(1, BAND_BYTES // tile_row_bytes)
    return band if band < row_tiles else 0


def kernel_applies(b: BlockedConv) -> bool:
    """Whether the register-tiled kernel computes ``b``: depthwise with equal blocks, or every
    block inside one group with filter blocks equal to the data's."""
    d = b.dims
    if b.depthwise:
        return b.ki == 1 and b.ob == b.cb
    return b.ki == b.cb and d.c_per_group % b.cb == 0 and d.o_per_group % b.ob == 0


def _source(data: Tensor, b: BlockedConv, tile: NchwcTile, name: str, in_place: bool) -> Tensor:
    """The (padded) input the kernel reads: covers every padded output tile's window. With
    ``in_place`` the padding is an expression the kernel's reads inline (guarded reads of
    ``data``); else a zero-padded copy (a stage of its own)."""
    d = b.dims
    (sh, sw), (dh, dw) = d.stride, d.dilation
    height = (round_up(d.oh, tile.th) - 1) * sh + (d.kh - 1) * dh + 1
    width = (round_up(d.ow, tile.tw) - 1) * sw + (d.kw - 1) * dw + 1
    if not any(d.pad) and height <= d.h and width <= d.w:
        return data
    top, left = d.pad[0], d.pad[1]
    zero = convert(0.0, data.dtype) if data.dtype.is_float else convert(0, data.dtype)

    def body(n: Any, c: Any, y: Any, x: Any, i: Any) -> Any:
        inside = (y >= top) & (y < top + d.h) & (x >= left) & (x < left + d.w)
        return te.if_then_else(inside, data[n, c, y - top, x - left, i], zero)

    if in_place:
        attrs = attrs_for("injective", Pattern.INJECTIVE)
    else:
        attrs = attrs_for("injective", Pattern.INJECTIVE, no_inline=True, partition=True)
    shape = (d.n, d.c // b.cb, max(height, d.h), max(width, d.w), b.cb)
    return te.compute(shape, body, name=f"{name}_pad", tag="pad", attrs=attrs)


def copy_share(d: Any) -> float:
    """The estimated time of a padded copy of the input over that of the convolution."""
    top, left, bottom, right = d.pad
    copied = d.c * (d.h + top + bottom) * (d.w + left + right)  # per image, as the work
    macs = d.o * d.oh * d.ow * d.c_per_group * d.kh * d.kw
    return copied * generic.NS_PER_ELEMENT / max(1, macs * common.NS_PER_MAC)


def plain_tiles(d: Any, tile: NchwcTile) -> float:
    """The share of output tiles whose windows lie inside the input (no padding read)."""

    def share(out: int, size: int, stride: int, k: int, dilation: int, pad: int, n: int) -> float:
        tiles = -(-out // size)
        inside = 0
        for t in range(tiles):
            first = t * size * stride - pad
            last = (t * size + size - 1) * stride + (k - 1) * dilation - pad
            inside += first >= 0 and last < n
        return inside / tiles

    (sh, sw), (dh, dw) = d.stride, d.dilation
    rows = share(d.oh, tile.th, sh, d.kh, dh, d.pad[0], d.h)
    return rows * share(d.ow, tile.tw, sw, d.kw, dw, d.pad[1], d.w)


def _accumulate(
    src: Tensor, kernel: Tensor, b: BlockedConv, tile: NchwcTile, name: str, in_place: bool
) -> Tensor:
    d = b.dims
    (sh, sw), (dh, dw) = d.stride, d.dilation
    it = src.shape[0].dtype  # NOTE: int64 with a symbolic batch: every index in one dtype
    ry = te.reduce_axis((convert(0, it), convert(d.kh, it)), name="ry")
    rx = te.reduce_axis((convert(0, it), convert(d.kw, it)), name="rx")
    if b.depthwise:
        axes = [ry, rx]

        def body(n: Any, oc: Any, y: Any, x: Any, oi: Any) -> Any:
            value = src[n, oc, y * sh + ry * dh, x * sw + rx * dw, oi]
            return te.sum(value * kernel[oc, 0, ry, rx, 0, oi], axis=axes)

    else:
        rc = te.reduce_axis((convert(0, it), convert(d.c_per_group // b.cb, it)), name="rc")
        ri = te.reduce_axis((convert(0, it), convert(b.cb, it)), name="ri")
        axes = [rc, ry, rx, ri]
        per_group = d.o_per_group // b.ob

        def body(n: Any, oc: Any, y: Any, x: Any, oi: Any) -> Any:
            block = rc if d.groups == 1 else oc // per_group * (d.c_per_group // b.cb) + rc
            value = src[n, block, y * sh + ry * dh, x * sw + rx * dw, ri]
            return te.sum(value * kernel[oc, rc, ry, rx, ri, oi], axis=axes)

    shape = (d.n, d.o // b.ob, round_up(d.oh, tile.th), round_up(d.ow, tile.tw), b.ob)
    # NOTE: with one input channel per block (a stem: 3 channels) each read is a scalar, and a
    # guarded tile tests every read: its column loop is split (`SPLIT`) so the tiles at the
    # side borders of inner rows test the column only (measured: 1x3x64x64 3x3, 70 -> 65 us);
    # other kernels hoist the tests out of their channel loop and keep two copies of the tile
    columns = SPLIT if b.cb == 1 else GUARD
    padding = (GUARD, columns) if in_place else None
    attrs = attrs_for(ACC_TAG, Pattern.OUT_ELEMWISE_FUSABLE, tile=tile, padding_in_place=padding)
    return te.compute(shape, body, name=f"{name}_acc", tag=ACC_TAG, attrs=attrs)


def conv2d_nchwc(
    data: Any,
    kernel: Any,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    name: str = "conv2d_nchwc",
    target: Any = None,
) -> Tensor:
    """Blocked 2-D convolution as padded CPU stages tiled for ``target`` (default: the host;
    other arguments as `kiln.topi.nn.conv2d_nchwc.conv2d_nchwc`). Blockings the kernel does
    not cover (`kernel_applies`) and symbolic spatial extents get the generic compute; a
    symbolic batch keeps the kernel (the images are the outermost loop)."""
    b = blocked_conv(CONV2D_NCHWC, data, kernel, stride, padding, dilation, groups)
    d = b.dims
    static = all(const_int(e) is not None for e in (d.h, d.w))
    if not static or not kernel_applies(b):
        return nn_conv2d_nchwc(data, kernel, stride, padding, dilation, groups, name)
    n = d.n if const_int(d.n) is None else const_int(d.n)
    b = replace(b, dims=replace(d, n=n, h=const_int(d.h), w=const_int(d.w)))
    filter_bytes = (const_product(kernel.shape) or 0) * data.dtype.itemsize
    block_bytes = filter_bytes * b.ob // b.dims.o
    kw = 1 if b.depthwise or block_bytes > TAPS_FILTER_BYTES else b.dims.kw
    tile = nchwc_tile(
        b.dims.oh, b.dims.ow, b.ob, data.dtype, cpu_target(target), kw, depthwise=b.depthwise
    )
    if not b.depthwise and b.dims.o > b.ob and filter_bytes <= FILTERS_IN_L2:
        tile = replace(tile, blocks_inner=True)
        tile = replace(tile, band=band_rows(b.dims, tile, b.ob, data.dtype.itemsize))
    # NOTE: a symbolic batch may fuse the images with the row tiles (`_parallel_images`): the
    # rows could not be partitioned, so those convolutions keep the copy
    in_place = (
        isinstance(b.dims.n, int)
        and (b.depthwise or cpu_target(target).cpu.vector_registers >= IN_PLACE_REGISTERS)
        and plain_tiles(b.dims, tile) >= MIN_PLAIN_TILES
        and copy_share(b.dims) >= MIN_COPY_SHARE
    )
    acc = _accumulate(_source(data, b, tile, name, in_place), kernel, b, tile, name, in_place)
    d = b.dims
    attrs = attrs_for(
        CONV2D_NCHWC,
        Pattern.INJECTIVE,
        stride=d.stride,
        padding=d.pad,
        dilation=d.dilation,
        groups=d.groups,
    )
    shape = (d.n, d.o // b.ob, d.oh, d.ow, b.ob)
    return te.compute(shape, lambda *i: acc[i], name=name, tag=CONV2D_NCHWC, attrs=attrs)


# -- schedule ------------------------------------------------------------------------------------
def schedule_packed(sch: Schedule, acc: Tensor, out: Stage) -> list[Stage]:
    """Tile ``out`` (the stage reading the accumulation ``acc``) and compute ``acc`` per tile;
    returns the stages it scheduled.

    Loops: ``(n, channel block, row tile, column tile)``, the first with enough iterations in
    parallel: a block's filters (``C * kh * kw * ob`` values) stay in L2 while the input
    streams past them. With ``tile.blocks_inner`` (all filters fit in L2):
    ``(n, row tile, column tile, channel block)``: the input of a tile is read from L1 for every
    block instead of from memory once per block (1x1 and strided convolutions read much input
    per filter tap); with ``tile.band`` (`BAND_BYTES`) ``(n, band x block fused, row tile,
    column tile)``. A symbolic batch: see `_parallel_images`.
    """
    tile: NchwcTile = acc.op.attrs["tile"]
    work = common.work_of(acc.op)
    if work is not None and len(acc.op.reduce_axis) == 2:  # depthwise
        work *= DEPTHWISE_MAC_COST
    n, oc, y, x, o = out.op.axis
    yo, yi = out.split(y, factor=tile.th)
    xo, xi = out.split(x, factor=tile.tw)
    tiles = [n, yo, xo, oc] if tile.blocks_inner else [n, oc, yo, xo]
    if tile.blocks_inner and tile.band:
        yb, yo = out.split(yo, factor=tile.band)
        out.reorder(n, yb, oc, yo, xo)
        tiles = [n, out.fuse(yb, oc), yo, xo]
    out.reorder(*tiles, yi, xi, o)
    if work is None:
        tiles = _parallel_images(out, acc, tiles)
    elif common.worth_parallel(work):
        out.parallel(common.pick_parallel(out, tiles))
    modes = acc.op.attrs.get("padding_in_place")
    for axis, mode in zip((yo, xo), modes or ()):
        if axis in tiles:
            out.pragma(axis, common.PARTITION, mode)
    out.unroll(yi)
    out.unroll(xi)
    common.vectorize(out, o)
    a = sch[acc]
    a.compute_at(out, tiles[-1])
    an, aoc, ay, ax, ao = acc.op.axis
    a.reorder(*acc.op.reduce_axis, an, aoc, ay, ax, ao)
    if tile.taps > 1:
        rc, ry, rx, ri = acc.op.reduce_axis
        a.reorder(rc, ry, ri, rx, an, aoc, ay, ax, ao)
        a.unroll(rx)
    a.unroll(ay)
    a.unroll(ax)
    if tile.unrolled_block:
        a.unroll(acc.op.reduce_axis[-1])
    common.vectorize(a, ao)
    if len(acc.op.reduce_axis) == 2:
        # NOTE: depthwise: the taps along a row unrolled, so neighbouring pixels' taps share
        # their input vectors (loaded once per row of taps instead of once per tap and pixel)
        a.unroll(acc.op.reduce_axis[1])
    return [out, a, *common.schedule_packs(sch, acc, work)]


def _parallel_images(out: Stage, acc: Tensor, tiles: list[Any]) -> list[Any]:
    """Threads for a symbolic batch (``tiles[0]``, the images, outermost): the images and the
    per-image tile loops up to the one a single image would run in parallel, fused into one
    loop with a run-time grain (`common.parallelize_tiles`); an image too small for threads
    runs the images alone in parallel with that grain. Returns the tile loops left."""
    n, per_image = tiles[0], tiles[1:]
    depth = common.work_of_reduction(acc.op)
    if len(acc.op.reduce_axis) == 2:  # depthwise
        depth *= DEPTHWISE_MAC_COST
    points = 1
    for axis in acc.op.axis[1:]:
        points *= const_int(axis.dom.extent) or 1
    # NOTE: an iteration's work is counted as a fixed batch's is (the accumulator's points, its
    # padded tiles included), so the grain agrees with the fixed-size decision; counting the
    # output's loops halved it for the demo CNN's first convolution (3 input channels), which
    # then ran on one thread at batch 8 where its static twin ran on two (24 us against 10).
    per_iter = points * depth
    if common.worth_parallel(per_iter):
        pick = per_image.index(common.pick_parallel(out, per_image)) + 1
        for axis in per_image[:pick]:
            per_iter //= max(1, common.leaf_extent(out, axis) or 1)
        n = out.fuse(n, *per_image[:pick])
        per_image = per_image[pick:]
    common.parallelize_tiles(out, n, None, max(1, per_iter))
    return [n, *per_image]


def schedule_conv2d_nchwc(outs: Any, target: Any = None) -> Schedule:
    """The CPU schedule of blocked convolutions (register-tiled as their computes say) with
    their element-wise epilogues inlined; generic computes get `kiln.topi.schedule_for`'s."""
    return schedule_for(outs, target if target is not None else "c")
