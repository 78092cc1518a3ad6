"""2-D convolution (NCHW) for the CPU: padded computes and a register-blocked schedule.

`conv2d_nchw` computes the same values as `kiln.topi.nn.conv2d.conv2d_nchw` as an implicit
matrix product whose "rows" are output channels and whose "columns" are output pixels along a
row, so no layout change is needed (the output is NCHW, pixels contiguous):

1. ``<name>_pad`` zero-pads the input, also past the bottom/right edge far enough that padded
   output tiles read only memory that exists (skipped when nothing needs padding), and
   ``<name>_kpack`` reorders the filters as ``[o // rows, ky, kx, c, o % rows]``;
2. ``<name>_acc`` accumulates over a padded ``(channels, rows, columns)`` grid: output channels
   past the end repeat the last filter (``min(o, O - 1)``), output pixels past the end read the
   zero padding, so the kernel has no guard;
3. the output copies each tile out (guarded at the edges); element-wise epilogues are inlined.

The register tile (`conv_tile`, for the ``target`` the computes are made for, default the host) is
``rows`` output channels x ``th`` output rows x ``tw`` output columns (``tw`` a multiple of the
vector lanes, or half a register short of one; with AVX2 e.g. 6 x 2 x 8 or 6 x 1 x 16, with
AVX-512 6 x 1 x 64, 6 x 1 x 56 or 6 x 2 x 32, whichever pads least). Each step of the
(ky, kx, channel) reduction loads ``th * tw / lanes`` input vectors, broadcasts ``rows`` filter
taps and issues ``rows * th * tw / lanes`` FMAs. With stride 1 the input vectors are contiguous;
other strides gather lane by lane (correct, slower).
NOTE: the channel loop is innermost: with ``ky`` innermost GCC keeps the input rows of one step
for the next (predictive commoning), which costs registers and spilled the accumulators.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kiln import te
from kiln.ir.target import Target
from kiln.te import Schedule, Stage, Tensor
from kiln.tir.expr import Min, convert
from kiln.topi.nn.conv2d import CONV2D, ConvDims, conv_dims, pad_nchw
from kiln.topi.tag import Pattern, attrs_for
from kiln.topi.x86 import common
from kiln.topi.x86.cpu import cpu_target, lanes, matmul_tile, round_up, tile_vectors

ACC_TAG = "x86_conv2d_nchw"
"""Tag of the accumulation stage (the anchor `schedule_conv2d_nchw` looks for)."""


@dataclass(frozen=True)
class ConvTile:
    """A register tile of ``rows`` output channels x ``th`` output rows x ``tw`` columns."""

    rows: int
    th: int
    tw: int


def conv_tile(d: ConvDims, dtype: Any, target: Target) -> ConvTile:
    """The tile for ``d`` on ``target``: as many channel rows as a matmul tile, and of the
    spatial shapes holding the same number of vector registers per channel, the one whose
    padding wastes least. A row's last register may be half full (``tw`` = 56 with 16 lanes:
    three registers and a half-width one).

    NOTE: a half register costs at most a full one's issue slot, and half of it where 512-bit
    operations are split in two (Zen 4): measured 1 thread on 1x64x56x56 3x3 (best of 40),
    6 x 1 x 64 ran at 81-87 GFLOP/s, 6 x 1 x 56 at 94-107.
    """
    width = lanes(target, dtype)
    base = matmul_tile(d.o, tile_vectors(target) * width, dtype, target)
    vectors = base.cols // width
    shapes = [
        (th, (vectors // th) * width - cut)
        for th in range(1, vectors + 1)
        if vectors % th == 0
        for cut in dict.fromkeys((0, width // 2))
    ]

    def waste(shape: tuple[int, int]) -> tuple[int, int, int]:
        th, tw = shape
        return round_up(d.oh, th) * round_up(d.ow, tw), th, -tw

    th, tw = min(shapes, key=waste)
    return ConvTile(base.rows, th, tw)


def _source(data: Tensor, d: ConvDims, tile: ConvTile, name: str) -> Tensor:
    """The (padded) input the kernel reads: covers every padded output tile's window."""
    (sh, sw), (dh, dw) = d.stride, d.dilation
    height = (round_up(d.oh, tile.th) - 1) * sh + (d.kh - 1) * dh + 1
    width = (round_up(d.ow, tile.tw) - 1) * sw + (d.kw - 1) * dw + 1
    if not any(d.pad) and height <= d.h and width <= d.w:
        return data
    return pad_nchw(data, d, height, width, f"{name}_pad")


def _pack_kernel(kernel: Tensor, d: ConvDims, tile: ConvTile, name: str) -> Tensor:
    """``kernel`` as ``[o // rows, ky, kx, c, o % rows]``, the order the kernel reads it in: the
    ``rows`` taps one reduction step broadcasts are adjacent, and consecutive input channels
    follow each other. Channels past the end repeat the last filter."""
    rows = tile.rows
    o_pad = round_up(d.o, rows)

    def body(oo: Any, ky: Any, kx: Any, c: Any, oi: Any) -> Any:
        o = oo * rows + oi
        return kernel[o if o_pad == d.o else Min(o, convert(d.o - 1, o.dtype)), c, ky, kx]

    shape = (o_pad // rows, d.kh, d.kw, d.c_per_group, rows)
    attrs = attrs_for("injective", Pattern.INJECTIVE, no_inline=True)
    return te.compute(shape, body, name=f"{name}_kpack", attrs=attrs)


def _accumulate(src: Tensor, kernel: Tensor, d: ConvDims, tile: ConvTile, name: str) -> Tensor:
    rc = te.reduce_axis((0, d.c_per_group), name="rc")
    ry = te.reduce_axis((0, d.kh), name="ry")
    rx = te.reduce_axis((0, d.kw), name="rx")
    (sh, sw), (dh, dw) = d.stride, d.dilation
    rows = tile.rows
    o_pad = round_up(d.o, rows)
    packed = _pack_kernel(kernel, d, tile, name)

    def body(n: Any, o: Any, y: Any, x: Any) -> Any:
        oc = o if o_pad == d.o else Min(o, convert(d.o - 1, o.dtype))
        c = rc if d.groups == 1 else (oc // d.o_per_group) * d.c_per_group + rc
        tap = packed[o // rows, ry, rx, rc, o % rows]
        return te.sum(src[n, c, y * sh + ry * dh, x * sw + rx * dw] * tap, axis=[rc, ry, rx])

    shape = (d.n, o_pad, round_up(d.oh, tile.th), round_up(d.ow, tile.tw))
    attrs = attrs_for(ACC_TAG, Pattern.OUT_ELEMWISE_FUSABLE, tile=tile)
    return te.compute(shape, body, name=f"{name}_acc", tag=ACC_TAG, attrs=attrs)


def conv2d_nchw(
    data: Any,
    kernel: Any,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    name: str = "conv2d_nchw",
    target: Any = None,
) -> Tensor:
    """2-D convolution of NCHW ``data`` with an OIHW ``kernel`` as padded CPU stages tiled for
    ``target`` (default: the host; other arguments as `kiln.topi.nn.conv2d.conv2d_nchw`)."""
    d = conv_dims(CONV2D, data, kernel, stride, padding, dilation, groups)
    tile = conv_tile(d, data.dtype, cpu_target(target))
    acc = _accumulate(_source(data, d, tile, name), kernel, d, tile, name)
    attrs = attrs_for(
        CONV2D,
        Pattern.INJECTIVE,
        stride=d.stride,
        padding=d.pad,
        dilation=d.dilation,
        groups=groups,
    )
    return te.compute((d.n, d.o, d.oh, d.ow), lambda *i: acc[i], name=name, tag=CONV2D, attrs=attrs)


# -- schedule ------------------------------------------------------------------------------------
def schedule_packed(sch: Schedule, acc: Tensor, out: Stage) -> list[Stage]:
    """Tile ``out`` (the stage reading the accumulation ``acc``) and compute ``acc`` per tile;
    returns the stages it scheduled."""
    tile: ConvTile = acc.op.attrs["tile"]
    work = common.work_of(acc.op)
    n, o, y, x = out.op.axis
    oo, oi = out.split(o, factor=tile.rows)
    yo, yi = out.split(y, factor=tile.th)
    xo, xi = out.split(x, factor=tile.tw)
    out.reorder(n, yo, xo, oo, oi, yi, xi)
    if common.worth_parallel(work):
        out.parallel(common.pick_parallel(out, [n, yo, xo, oo]))
    out.unroll(oi)
    out.unroll(yi)
    common.vectorize(out, xi)
    a = sch[acc]
    a.compute_at(out, oo)
    _, ao, ay, ax = acc.op.axis
    rc, ry, rx = acc.op.reduce_axis
    a.reorder(ry, rx, rc, ao, ay, ax)  # see the NOTE in the module docstring
    a.unroll(ao)
    a.unroll(ay)
    common.vectorize(a, ax)
    return [out, a, *common.schedule_packs(sch, acc, work)]


def schedule_plain(sch: Schedule, conv: Tensor, target: Any = None) -> list[Stage]:
    """A simple schedule for the plain `kiln.topi.nn.conv2d` compute: parallel over channels,
    the innermost output columns vectorized (``target``'s lanes, default the host's); the
    padding stage computed once."""
    stage = sch[conv]
    n, o, y, x = stage.op.axis
    width = lanes(cpu_target(target), conv.dtype)
    xo, xi = stage.split(x, factor=width)
    stage.reorder(n, o, y, *stage.op.reduce_axis, xo, xi)
    stage.vectorize(xi)
    work = common.work_of(conv.op)
    if common.worth_parallel(work):
        stage.parallel(common.fuse_axes(stage, [n, o]))
    return [stage, *common.schedule_packs(sch, conv, work)]


def schedule_conv2d_nchw(outs: Any, target: Any = None) -> Schedule:
    """The CPU schedule of convolutions (padded ones from this module, tiled as their computes
    say; plain ones from `kiln.topi.nn.conv2d`, for ``target``, default the host) with their
    element-wise epilogues inlined."""
    sch = common.create_with_inlined_epilogues(outs)
    for stage in list(sch.stages):
        op = stage.op
        if op.tag == ACC_TAG:
            host = common.tile_host(sch, stage)
            if host is not None:
                schedule_packed(sch, op.output(0), host)
        elif op.tag == CONV2D and getattr(op, "reduce_axis", ()):
            schedule_plain(sch, op.output(0), target)
    return sch
