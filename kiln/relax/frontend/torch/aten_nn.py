"""Core ATen network layers as operator records: ``convolution`` in 1-D, 2-D and 3-D, plain
and transposed (all through ``relax.nn.conv2d``); 3-D pools (two 2-D pools: max, average and
adaptive average are separable); reflection and replication padding (``relax.nn.pad``'s
``reflect`` / ``edge``); upsampling (``relax.image.resize`` with torch's coordinates);
``grid_sampler_2d`` (``relax.image.grid_sample``); ``cdist`` / ``pdist``; and attention
(``scaled_dot_product_attention``, ``_native_multi_head_attention``) as ``relax.nn.attention``.

Converters join `ATEN` when this module is imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kiln.errors import FrontendError
from kiln.relax import op as R
from kiln.relax.expr import Expr, const
from kiln.relax.frontend.torch.aten import TorchCtx, aten, dims_of, shape_arg

BIG = 2**62


def _static(dims: list[Any], what: str) -> list[int]:
    if not all(isinstance(d, int) for d in dims):
        raise FrontendError(f"{what} needs constant dims, got {dims}")
    return list(dims)


def _triple(v: Any, n: int) -> list[int]:
    items = [v] if isinstance(v, int) else list(v)
    return [int(items[0])] * n if len(items) == 1 else [int(i) for i in items]


# -- convolution ---------------------------------------------------------------------------------
@aten("convolution.default")
def _conv(ctx: TorchCtx, x: Expr, w: Expr, b: Any, stride: Any, padding: Any, dilation: Any,
          transposed: bool, output_padding: Any, groups: int) -> Expr:  # fmt: skip
    """1-D and 3-D convolutions become 2-D ones (1-D: an extent-1 axis; 3-D: one 2-D
    convolution per depth tap, summed); a transposed one is a convolution of the input spread
    by the stride, padded, with the flipped kernel."""
    rank = len(dims_of(x))
    if rank not in (3, 4, 5):
        raise FrontendError(f"convolution of a rank-{rank} input is not supported (1-D to 3-D)")
    n = rank - 2
    stride, padding, dilation = (_triple(v, n) for v in (stride, padding, dilation))
    if transposed and rank == 5:
        raise FrontendError("3-D transposed convolution is not supported")
    one = rank == 3
    if one:
        x, w = ctx.emit(R.expand_dims(x, [2])), ctx.emit(R.expand_dims(w, [2]))
        stride, padding, dilation = [1, *stride], [0, *padding], [1, *dilation]
        output_padding = [0, *_triple(output_padding, 1)]
    if transposed:
        out = _transposed(ctx, x, w, stride, padding, dilation, _triple(output_padding, 2), groups)
    elif rank == 5:
        out = _conv3d(ctx, x, w, stride, padding, dilation, groups)
    else:
        pad = [padding[0], padding[1], padding[0], padding[1]]
        out = ctx.emit(R.nn.conv2d(x, w, list(stride), pad, list(dilation), groups))
    if b is not None:
        out = ctx.emit(R.add(out, R.reshape(b, [1, -1] + [1] * (len(dims_of(out)) - 2))))
    return ctx.emit(R.squeeze(out, [2])) if one else out


def _spread(ctx: TorchCtx, x: Expr, stride: list[int]) -> Expr:
    """``x`` ``[N, C, H, W]`` with ``stride - 1`` zeros between neighbours on H and W."""
    if stride == [1, 1]:
        return x
    n, c, h, w = dims_of(x)
    sh, sw = stride
    x = ctx.emit(R.reshape(x, shape_arg([n, c, h, 1, w, 1])))
    x = ctx.emit(R.nn.pad(x, [0, 0, 0, 0, 0, 0, 0, sh - 1, 0, 0, 0, sw - 1]))
    x = ctx.emit(R.reshape(x, shape_arg([n, c, h * sh, w * sw])))
    return ctx.emit(R.strided_slice(x, [2, 3], [0, 0], [(h - 1) * sh + 1, (w - 1) * sw + 1]))


def _pad_or_crop(ctx: TorchCtx, x: Expr, before: list[int], after: list[int]) -> Expr:
    """``x`` padded with zeros on H and W (negative amounts crop)."""
    if any(v < 0 for v in before + after):
        h, w = dims_of(x)[2:]
        lo = [max(-v, 0) for v in before]
        hi = [n - max(-v, 0) for n, v in zip((h, w), after)]
        x = ctx.emit(R.strided_slice(x, [2, 3], lo, hi))
        before, after = [max(v, 0) for v in before], [max(v, 0) for v in after]
    if any(before + after):
        x = ctx.emit(R.nn.pad(x, [0, 0, 0, 0, before[0], after[0], before[1], after[1]]))
    return x


def _transposed(ctx: TorchCtx, x: Expr, w: Expr, stride: list[int], padding: list[int],
                dilation: list[int], output_padding: list[int], groups: int) -> Expr:  # fmt: skip
    cin, cout_g, kh, kw = _static(dims_of(w), "a transposed convolution's weight")
    x = _spread(ctx, x, stride)
    reach = [d * (k - 1) for d, k in zip(dilation, (kh, kw))]
    before = [r - p for r, p in zip(reach, padding)]
    after = [r - p + o for r, p, o in zip(reach, padding, output_padding)]
    x = _pad_or_crop(ctx, x, before, after)
    g = groups
    wt = ctx.emit(R.reshape(w, shape_arg([g, cin // g, cout_g, kh, kw])))
    wt = ctx.emit(R.permute_dims(wt, [0, 2, 1, 3, 4]))
    wt = ctx.emit(R.reshape(wt, shape_arg([g * cout_g, cin // g, kh, kw])))
    wt = ctx.emit(R.strided_slice(wt, [2, 3], [-1, -1], [-BIG, -BIG], [-1, -1]))
    return ctx.emit(R.nn.conv2d(x, wt, [1, 1], [0, 0, 0, 0], list(dilation), groups))


def _conv3d(ctx: TorchCtx, x: Expr, w: Expr, stride: list[int], padding: list[int],
            dilation: list[int], groups: int) -> Expr:  # fmt: skip
    """The sum over depth taps ``t`` of 2-D convolutions of the depth slices ``t * dil + d *
    stride`` (the batch and output depth merged)."""
    n, c, depth, h, wd = _static(dims_of(x), "a 3-D convolution")
    o, _, kd, kh, kw = _static(dims_of(w), "a 3-D convolution's weight")
    sd, pd, dd = stride[0], padding[0], dilation[0]
    if pd:
        x = ctx.emit(R.nn.pad(x, [0, 0, 0, 0, pd, pd, 0, 0, 0, 0]))
    out_d = (depth + 2 * pd - dd * (kd - 1) - 1) // sd + 1
    total = None
    for t in range(kd):
        lo = t * dd
        xs = ctx.emit(R.strided_slice(x, [2], [lo], [lo + (out_d - 1) * sd + 1], [sd]))
        xs = ctx.emit(R.permute_dims(xs, [0, 2, 1, 3, 4]))
        xs = ctx.emit(R.reshape(xs, shape_arg([n * out_d, c, h, wd])))
        wt = ctx.emit(R.squeeze(ctx.emit(R.strided_slice(w, [2], [t], [t + 1])), [2]))
        pad = [padding[1], padding[2], padding[1], padding[2]]
        y = ctx.emit(R.nn.conv2d(xs, wt, stride[1:], pad, dilation[1:], groups))
        total = y if total is None else ctx.emit(R.add(total, y))
    assert total is not None
    ho, wo = dims_of(total)[2:]
    total = ctx.emit(R.reshape(total, shape_arg([n, out_d, o, ho, wo])))
    return ctx.emit(R.permute_dims(total, [0, 2, 1, 3, 4]))


# -- 3-D pools: separable into a 2-D pool over (H, W) and one over D ------------------------------
def _separable(ctx: TorchCtx, x: Expr, hw: Any, d: Any) -> Expr:
    """``hw(x over [N, C*D, H, W])`` then ``d(. over [N, C, D, Ho*Wo])``, back to 5-D."""
    n, c, depth, h, w = _static(dims_of(x), "a 3-D pool")
    flat = ctx.emit(hw(ctx.emit(R.reshape(x, shape_arg([n, c * depth, h, w])))))
    ho, wo = dims_of(flat)[2:]
    deep = ctx.emit(d(ctx.emit(R.reshape(flat, shape_arg([n, c, depth, ho * wo])))))
    return ctx.emit(R.reshape(deep, shape_arg([n, c, dims_of(deep)[2], ho, wo])))


@aten("max_pool3d_with_indices.default", "max_pool3d.default")
def _max_pool3d(ctx: TorchCtx, x: Expr, kernel: Any, stride: Any = None, padding: Any = 0,
                dilation: Any = 1, ceil_mode: bool = False) -> Any:  # fmt: skip
    k, p, dl = _triple(kernel, 3), _triple(padding, 3), _triple(dilation, 3)
    s = _triple(stride, 3) if stride else k
    out = _separable(
        ctx,
        x,
        lambda t: R.nn.max_pool2d(t, k[1:], s[1:], [p[1], p[2], p[1], p[2]], dl[1:], ceil_mode),
        lambda t: R.nn.max_pool2d(
            t, [k[0], 1], [s[0], 1], [p[0], 0, p[0], 0], [dl[0], 1], ceil_mode
        ),
    )
    return (out, None) if "indices" in str(ctx.node.target) else out


@aten("avg_pool3d.default")
def _avg_pool3d(ctx: TorchCtx, x: Expr, kernel: Any, stride: Any = None, padding: Any = 0,
                ceil_mode: bool = False, count_include_pad: bool = True,
                divisor_override: Any = None) -> Expr:  # fmt: skip
    """Averages over boxes: the divisor, with or without the padding, is a product of one
    count per axis, so two 2-D averages give it."""
    if divisor_override is not None:
        raise FrontendError("avg_pool3d with divisor_override is not supported")
    k, p = _triple(kernel, 3), _triple(padding, 3)
    s = _triple(stride, 3) if stride else k
    inc = count_include_pad
    return _separable(
        ctx,
        x,
        lambda t: R.nn.avg_pool2d(t, k[1:], s[1:], [p[1], p[2], p[1], p[2]], 1, ceil_mode, inc),
        lambda t: R.nn.avg_pool2d(t, [k[0], 1], [s[0], 1], [p[0], 0, p[0], 0], 1, ceil_mode, inc),
    )


@aten("_adaptive_avg_pool3d.default", "adaptive_avg_pool3d.default")
def _adaptive3d(ctx: TorchCtx, x: Expr, size: Any) -> Expr:
    od, oh, ow = _triple(size, 3)
    return _separable(
        ctx,
        x,
        lambda t: R.nn.adaptive_avg_pool2d(t, [oh, ow]),
        lambda t: R.nn.adaptive_avg_pool2d(t, [od, oh * ow]),
    )


# -- padding and resampling ------------------------------------------------------------------------
@aten("reflection_pad1d.default", "reflection_pad2d.default", "reflection_pad3d.default",
      "replication_pad1d.default", "replication_pad2d.default",
      "replication_pad3d.default")  # fmt: skip
def _mirror_pad(ctx: TorchCtx, x: Expr, pad: Any) -> Expr:
    """``pad`` lists (before, after) from the last axis back, as ``F.pad`` does."""
    rank = len(dims_of(x))
    width = [0] * (2 * rank)
    for k in range(len(pad) // 2):
        axis = rank - 1 - k
        width[2 * axis], width[2 * axis + 1] = int(pad[2 * k]), int(pad[2 * k + 1])
    mode = "reflect" if "reflection" in str(ctx.node.target) else "edge"
    return ctx.emit(R.nn.pad(x, width, pad_mode=mode))


def _resize_args(x: Expr, size: Any, scales: Any) -> tuple[list[int], list[float]]:
    """The output size and, per axis, the scale torch maps coordinates with: the given factor,
    else ``out / in``."""
    dims = _static(dims_of(x), "upsampling")
    spatial = dims[2:]
    factors = [None] * len(spatial) if not scales else [float(s) for s in scales]
    if size is None:
        size = [int(np.floor(n * f)) for n, f in zip(spatial, factors)]
    size = [int(s) for s in size]
    coords = [f if f else o / n for f, o, n in zip(factors, size, spatial)]
    return [*dims[:2], *size], [1.0, 1.0, *coords]


@aten("upsample_nearest2d.vec", "upsample_nearest2d.default", "upsample_nearest1d.vec",
      "upsample_nearest1d.default")  # fmt: skip
def _nearest(ctx: TorchCtx, x: Expr, size: Any, *scales: Any) -> Expr:
    """Output index ``i`` reads input ``floor(i / scale)``."""
    factors = scales[0] if len(scales) == 1 and isinstance(scales[0], (list, tuple)) else [
        s for s in scales if s is not None]  # fmt: skip
    out, sc = _resize_args(x, size, factors)
    return ctx.emit(R.image.resize(x, out, sc, "nearest", "asymmetric", "floor"))


@aten("upsample_bilinear2d.vec", "upsample_bilinear2d.default", "upsample_linear1d.vec",
      "upsample_linear1d.default")  # fmt: skip
def _bilinear(ctx: TorchCtx, x: Expr, size: Any, align_corners: bool, *scales: Any) -> Expr:
    """``align_corners``: the corner pixels' centres line up; else half-pixel coordinates
    (torch clamps those below 0 to 0, as the edge clamp of linear resampling does)."""
    factors = scales[0] if len(scales) == 1 and isinstance(scales[0], (list, tuple)) else [
        s for s in scales if s is not None]  # fmt: skip
    out, sc = _resize_args(x, size, factors)
    mode = "align_corners" if align_corners else "half_pixel"
    return ctx.emit(R.image.resize(x, out, sc, "linear", mode))


@aten("grid_sampler_2d.default")
def _grid_sampler(ctx: TorchCtx, x: Expr, grid: Expr, mode: int, padding: int,
                  align_corners: bool) -> Expr:  # fmt: skip
    methods, paddings = ("bilinear", "nearest", "bicubic"), ("zeros", "border", "reflection")
    if mode == 2:
        raise FrontendError("grid_sample with mode='bicubic' is not supported")
    return ctx.emit(R.image.grid_sample(x, grid, methods[mode], paddings[padding], align_corners))


# -- distances -----------------------------------------------------------------------------------
def _distance(ctx: TorchCtx, diff: Expr, p: float) -> Expr:
    """The ``p``-norm over the last axis of ``diff``."""
    mag = ctx.emit(R.abs(diff))
    if p == float("inf"):
        return ctx.emit(R.max(mag, [-1]))
    if p == 0:
        return ctx.emit(R.sum(ctx.emit(R.astype(R.not_equal(mag, ctx.tensor(0)),
                                                ctx.out_dtype)), [-1]))  # fmt: skip
    if p == 1:
        return ctx.emit(R.sum(mag, [-1]))
    if p == 2:
        return ctx.emit(R.sqrt(ctx.emit(R.sum(ctx.emit(R.multiply(diff, diff)), [-1]))))
    total = ctx.emit(R.sum(ctx.emit(R.power(mag, ctx.tensor(float(p)))), [-1]))
    return ctx.emit(R.power(total, ctx.tensor(1.0 / float(p))))


@aten("_cdist_forward.default")
def _cdist(ctx: TorchCtx, a: Expr, b: Expr, p: float, compute_mode: Any = None) -> Expr:
    """``out[..., i, j] = ||a[..., i, :] - b[..., j, :]||_p``."""
    ra = len(dims_of(a))
    diff = ctx.emit(R.subtract(R.expand_dims(a, [ra - 1]), R.expand_dims(b, [ra - 2])))
    return _distance(ctx, diff, p)


@aten("_pdist_forward.default")
def _pdist(ctx: TorchCtx, x: Expr, p: float = 2.0) -> Expr:
    """The distances between every pair of rows ``i < j`` (row-major order)."""
    n = _static(dims_of(x), "pdist")[0]
    full = _cdist(ctx, x, x, p)
    pairs = [i * n + j for i in range(n) for j in range(i + 1, n)]
    flat = ctx.emit(R.reshape(full, shape_arg([n * n])))
    return ctx.emit(R.take(flat, const(np.array(pairs, "int64")), 0))
