"""Neural-network operators: ``MatMul Gemm Conv`` (1-D and 2-D), pools, normalizations and
``LRN``.

Convolutions and pools of 1-D data run as 2-D ones over a height of 1. ``auto_pad`` SAME needs
constant spatial extents. Normalizations without a relax operator of their own are written with
``mean``/``variance`` and element-wise operators.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kiln.errors import FrontendError
from kiln.relax import op as R
from kiln.relax.expr import Expr, const
from kiln.relax.frontend.onnx import values as V
from kiln.relax.frontend.onnx.ops import Ctx, Node, converter, dim_values, dtype, ndim
from kiln.relax.frontend.onnx.ops.elementwise import scalar
from kiln.relax.op.nn.conv import window_out
from kiln.relax.struct_info import INT64
from kiln.tir.expr import IntImm, PrimExpr


@converter("MatMul")
def _matmul(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    return ctx.emit(R.matmul(ctx.tensor(ins, 0), ctx.tensor(ins, 1)))


@converter("Gemm")
def _gemm(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    a, b = ctx.tensor(ins, 0), ctx.tensor(ins, 1)
    if node.attrs.get("transA", 0):
        a = ctx.emit(R.permute_dims(a, [1, 0]))
    if node.attrs.get("transB", 0):
        b = ctx.expr(ins[1].T) if V.is_const(ins[1]) else ctx.emit(R.permute_dims(b, [1, 0]))
    out = ctx.emit(R.matmul(a, b))
    alpha, beta = node.attrs.get("alpha", 1.0), node.attrs.get("beta", 1.0)
    if alpha != 1.0:
        out = ctx.emit(R.multiply(out, scalar(alpha, out)))
    if len(ins) > 2 and ins[2] is not None:
        c = ctx.tensor(ins, 2)
        if beta != 1.0:
            c = ctx.emit(R.multiply(c, scalar(beta, c)))
        out = ctx.emit(R.add(out, c))
    return out


def _same_pads(sizes: list[Any], k: list[int], s: list[int], d: list[int], mode: str) -> list[int]:
    """ONNX ``auto_pad`` SAME_UPPER / SAME_LOWER as explicit begin... end... pads."""
    begin, end = [], []
    for n, kk, ss, dd in zip(sizes, k, s, d):
        if isinstance(n, PrimExpr):
            raise FrontendError("auto_pad SAME needs constant spatial extents")
        total = max((-(-n // ss) - 1) * ss + (kk - 1) * dd + 1 - n, 0)
        lo = total // 2 if mode == "SAME_UPPER" else total - total // 2
        begin.append(lo)
        end.append(total - lo)
    return begin + end


def _window(node: Node, spatial: list[Any], kernel: list[int]) -> tuple[list, list, list]:
    """(strides, dilations, pads) of a conv/pool node over ``spatial`` extents."""
    r = len(kernel)
    strides = list(node.attrs.get("strides", [1] * r))
    dil = list(node.attrs.get("dilations", [1] * r))
    mode = node.attrs.get("auto_pad", "NOTSET")
    if mode in ("SAME_UPPER", "SAME_LOWER"):
        pads = _same_pads(spatial, kernel, strides, dil, mode)
    elif mode == "VALID":
        pads = [0] * (2 * r)
    else:
        pads = list(node.attrs.get("pads", [0] * (2 * r)))
    return strides, dil, pads


def _to_2d(ctx: Ctx, x: Expr, what: str) -> tuple[Expr, bool]:
    n = ndim(x)
    if n == 3:
        return ctx.emit(R.expand_dims(x, [2])), True
    if n != 4:
        raise FrontendError(f"{what} of {n - 2}-D data is not supported (1-D and 2-D are)")
    return x, False


def _pair(v: list[int], one: bool, fill: int) -> list[int]:
    return [fill, *v] if one else list(v)


@converter("Conv")
def _conv(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x, w = ctx.tensor(ins, 0), ctx.tensor(ins, 1)
    kernel = [int(k) for k in dim_values(w)[2:]]
    strides, dil, pads = _window(node, dim_values(x)[2:], kernel)
    x2, one = _to_2d(ctx, x, "Conv")
    if one:
        w = ctx.emit(R.expand_dims(w, [2]))
        pads = [0, pads[0], 0, pads[1]]
    out = ctx.emit(
        R.nn.conv2d(
            x2,
            w,
            _pair(strides, one, 1),
            [pads[0], pads[1], pads[2], pads[3]],
            _pair(dil, one, 1),
            node.attrs.get("group", 1),
        )
    )
    if len(ins) > 2 and ins[2] is not None:
        bias = ins[2]
        if V.is_const(bias):
            b = ctx.expr(bias.reshape(1, -1, 1, 1))
        else:
            b = ctx.emit(R.reshape(ctx.tensor(ins, 2), [1, -1, 1, 1]))
        out = ctx.emit(R.add(out, b))
    return ctx.emit(R.squeeze(out, [2])) if one else out


@converter("MaxPool", "AveragePool")
def _pool(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    if len(node.outputs) > 1 and node.outputs[1]:
        raise FrontendError("MaxPool's Indices output is not supported")
    x = ctx.tensor(ins, 0)
    kernel = list(node.attrs["kernel_shape"])
    strides, dil, pads = _window(node, dim_values(x)[2:], kernel)
    x2, one = _to_2d(ctx, x, node.op_type)
    if one:
        pads = [0, pads[0], 0, pads[1]]
    fn = R.nn.max_pool2d if node.op_type == "MaxPool" else R.nn.avg_pool2d
    out = ctx.emit(
        fn(
            x2,
            _pair(kernel, one, 1),
            _pair(strides, one, 1),
            pads,
            _pair(dil, one, 1),
            bool(node.attrs.get("ceil_mode", 0)),
            bool(node.attrs.get("count_include_pad", 0)),
        )
    )
    return ctx.emit(R.squeeze(out, [2])) if one else out


@converter("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    axes = list(range(2, ndim(x)))
    fn = R.mean if node.op_type == "GlobalAveragePool" else R.max
    return ctx.emit(fn(x, axes, True))


@converter("BatchNormalization")
def _batch_norm(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    if node.attrs.get("training_mode", 0):
        raise FrontendError("BatchNormalization in training mode is not supported")
    x, scale, bias, mean, var = (ctx.tensor(ins, i) for i in range(5))
    eps = node.attrs.get("epsilon", 1e-5)
    out = ctx.emit(R.nn.batch_norm(x, scale, bias, mean, var, 1, eps))
    return ctx.emit(out[0])


def _normalize(ctx: Ctx, x: Expr, axes: list[int], eps: float) -> tuple[Expr, Expr, Expr]:
    """``(x - mean) / sqrt(var + eps)`` over ``axes``, the mean and the inverse std dev."""
    mean = ctx.emit(R.mean(x, axes, True))
    centered = ctx.emit(R.subtract(x, mean))
    var = ctx.emit(R.mean(R.multiply(centered, centered), axes, True))
    inv = ctx.emit(R.rsqrt(R.add(var, scalar(eps, x))))
    return ctx.emit(R.multiply(centered, inv)), mean, inv


def _channel(ctx: Ctx, v: Expr, rank: int) -> Expr:
    return ctx.emit(R.reshape(v, [1, -1] + [1] * (rank - 2)))


@converter("LayerNormalization")
def _layer_norm(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    n = ndim(x)
    axis = node.attrs.get("axis", -1) % n
    axes = list(range(axis, n))
    eps = node.attrs.get("epsilon", 1e-5)
    extra = [o for o in node.outputs[1:] if o]
    normed_shape = dim_values(x)[axis:]
    scale = ctx.tensor(ins, 1)
    if dim_values(scale) != normed_shape and not extra:
        scale = ctx.emit(R.broadcast_to(scale, normed_shape))
    bias = ctx.tensor(ins, 2) if len(ins) > 2 and ins[2] is not None else None
    if not extra and dtype(x).startswith("float"):
        if bias is None:
            bias = const(np.zeros([int(d) for d in normed_shape], dtype(x)))
        elif dim_values(bias) != normed_shape:
            bias = ctx.emit(R.broadcast_to(bias, normed_shape))
        return ctx.emit(R.nn.layer_norm(x, scale, bias, axes, eps))
    normed, mean, inv = _normalize(ctx, x, axes, eps)
    out = ctx.emit(R.multiply(normed, scale))
    if bias is not None:
        out = ctx.emit(R.add(out, bias))
    return [out, mean, inv]


@converter("InstanceNormalization")
def _instance_norm(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    n = ndim(x)
    normed, _, _ = _normalize(ctx, x, list(range(2, n)), node.attrs.get("epsilon", 1e-5))
    out = ctx.emit(R.multiply(normed, _channel(ctx, ctx.tensor(ins, 1), n)))
    return ctx.emit(R.add(out, _channel(ctx, ctx.tensor(ins, 2), n)))


@converter("GroupNormalization")
def _group_norm(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    d = dim_values(x)
    g = node.attrs["num_groups"]
    grouped = ctx.emit(R.reshape(x, [d[0], g, -1]))
    normed, _, _ = _normalize(ctx, grouped, [2], node.attrs.get("epsilon", 1e-5))
    back = ctx.emit(R.reshape(normed, [int(e) if not isinstance(e, PrimExpr) else e for e in d]))
    scale, bias = ctx.tensor(ins, 1), ctx.tensor(ins, 2)
    if ctx.opset < 21:  # NOTE: opset 18 gives one scale/bias per group
        per = int(d[1]) // g
        scale = ctx.emit(R.reshape(R.broadcast_to(R.reshape(scale, [g, 1]), [g, per]), [-1]))
        bias = ctx.emit(R.reshape(R.broadcast_to(R.reshape(bias, [g, 1]), [g, per]), [-1]))
    out = ctx.emit(R.multiply(back, _channel(ctx, scale, len(d))))
    return ctx.emit(R.add(out, _channel(ctx, bias, len(d))))


@converter("RMSNormalization")
def _rms_norm(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    n = ndim(x)
    axes = list(range(node.attrs.get("axis", -1) % n, n))
    eps = node.attrs.get("epsilon", 1e-5)
    ms = ctx.emit(R.mean(R.multiply(x, x), axes, True))
    out = ctx.emit(R.multiply(x, R.rsqrt(R.add(ms, scalar(eps, x)))))
    return ctx.emit(R.multiply(out, ctx.tensor(ins, 1)))


@converter("MeanVarianceNormalization")
def _mvn(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    axes = [a % ndim(x) for a in node.attrs.get("axes", [0, 2, 3])]
    normed, _, _ = _normalize(ctx, x, axes, 1e-9)
    return normed


@converter("LpNormalization")
def _lp_norm(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    axis = node.attrs.get("axis", -1) % ndim(x)
    if node.attrs.get("p", 2) == 1:
        norm = ctx.emit(R.sum(R.abs(x), [axis], True))
    else:
        norm = ctx.emit(R.sqrt(R.sum(R.multiply(x, x), [axis], True)))
    zero = ctx.emit(R.equal(norm, scalar(0, x)))
    safe = ctx.emit(R.where(zero, scalar(1, x), norm))
    return ctx.emit(R.divide(x, safe))


@converter("LpPool")
def _lp_pool(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    p = float(node.attrs.get("p", 2))
    kernel = list(node.attrs["kernel_shape"])
    strides, dil, pads = _window(node, dim_values(x)[2:], kernel)
    x2, one = _to_2d(ctx, x, "LpPool")
    if one:
        pads = [0, pads[0], 0, pads[1]]
    kernel, strides, dil = _pair(kernel, one, 1), _pair(strides, one, 1), _pair(dil, one, 1)
    ceil = bool(node.attrs.get("ceil_mode", 0))
    powered = ctx.emit(R.power(R.abs(x2), scalar(p, x)))
    # NOTE: the sum of |x|^p over each window's in-input taps is the mean over windows that lie
    # whole inside a zero-padded input, times the window size: padding by exactly what the last
    # window reaches (`_whole_window_pads`) makes every window whole.
    width = _whole_window_pads(dim_values(x2)[2:], kernel, strides, dil, pads, ceil)
    if any(width):
        powered = ctx.emit(R.nn.pad(powered, [0, 0, 0, 0, *width]))
    avg = ctx.emit(R.nn.avg_pool2d(powered, kernel, strides, 0, dil, False, True))
    size = float(np.prod(kernel))
    out = ctx.emit(R.power(R.multiply(avg, scalar(size, x)), scalar(1.0 / p, x)))
    return ctx.emit(R.squeeze(out, [2])) if one else out


def _whole_window_pads(
    sizes: list[Any], k: list[int], s: list[int], d: list[int], pads: list[int], ceil: bool
) -> list[int]:
    """``[lo_h, hi_h, lo_w, hi_w]``: the pool's own low pads and high pads that reach the end of
    its last window (``ceil_mode``: past the pool's high pads; needs constant extents)."""
    width = []
    for i, n in enumerate(sizes):
        lo, hi = pads[i], pads[i + 2]
        if ceil:
            if isinstance(n, PrimExpr):
                raise FrontendError("LpPool with ceil_mode needs constant spatial extents")
            out = window_out(IntImm(INT64, n), k[i], s[i], lo, hi, d[i], True)
            hi = max((out - 1) * s[i] + d[i] * (k[i] - 1) + 1 - n - lo, 0)
        width += [lo, hi]
    return width


@converter("LRN")
def _lrn(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    size = node.attrs["size"]
    alpha, beta = node.attrs.get("alpha", 1e-4), node.attrs.get("beta", 0.75)
    bias = node.attrs.get("bias", 1.0)
    channels = dim_values(x)[1]
    lo = (size - 1) // 2
    width = [0] * (2 * ndim(x))
    width[2], width[3] = lo, size - 1 - lo
    padded = ctx.emit(R.nn.pad(R.multiply(x, x), width, 0.0))
    total = None
    for k in range(size):
        part = R.strided_slice(padded, [1], [k], [k + channels])
        total = ctx.emit(part if total is None else R.add(total, part))
    base = R.add(scalar(bias, x), R.multiply(total, scalar(alpha / size, x)))
    return ctx.emit(R.divide(x, R.power(base, scalar(beta, x))))


def _resize_target(ctx: Ctx, node: Node, ins: list[Any], shape: list[int]) -> tuple[list, list]:
    """(output size, scale per axis) of a Resize/Upsample node."""
    rank = len(shape)
    axes = [a % rank for a in node.attrs.get("axes", range(rank))]
    scales_in = ins[2] if len(ins) > 2 and ins[2] is not None else None
    if scales_in is not None and not ctx.const(scales_in, "Resize's scales").size:
        scales_in = None
    sizes_in = ins[3] if len(ins) > 3 and ins[3] is not None else None
    if node.op_type == "Upsample":
        scales_in = ins[1] if len(ins) > 1 else np.asarray(node.attrs["scales"])
    size, scale = list(shape), [1.0] * rank
    if scales_in is not None:
        given = [float(s) for s in ctx.const(scales_in, "Resize's scales").reshape(-1)]
        for a, s in zip(axes, given):
            scale[a], size[a] = s, int(np.floor(shape[a] * s))
        return size, scale
    if sizes_in is None:
        raise FrontendError("Resize needs scales or sizes")
    given = [int(s) for s in ctx.const(sizes_in, "Resize's sizes").reshape(-1)]
    ratios = [given[k] / shape[a] for k, a in enumerate(axes)]
    policy = node.attrs.get("keep_aspect_ratio_policy", "stretch")
    if policy != "stretch":
        r = min(ratios) if policy == "not_larger" else max(ratios)
        ratios = [r] * len(axes)
        given = [int(np.floor(shape[a] * r + 0.5)) for a in axes]
    for k, a in enumerate(axes):
        size[a], scale[a] = given[k], ratios[k]
    return size, scale


@converter("Resize", "Upsample")
def _resize(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    shape = dim_values(x)
    if any(isinstance(d, PrimExpr) for d in shape):
        raise FrontendError("Resize needs constant input shapes")
    if node.attrs.get("antialias", 0):
        raise FrontendError("Resize with antialias is not supported")
    mode = node.attrs.get("mode", "nearest")
    if mode == "cubic":
        raise FrontendError("Resize mode 'cubic' is not supported (nearest, linear)")
    size, scale = _resize_target(ctx, node, ins, [int(d) for d in shape])
    coord = node.attrs.get("coordinate_transformation_mode", "half_pixel")
    if node.op_type == "Upsample":
        coord = "asymmetric"
    roi = None
    if coord == "tf_crop_and_resize":
        rank = len(shape)
        given = [float(r) for r in ctx.const(ins[1], "Resize's roi").reshape(-1)]
        axes = [a % rank for a in node.attrs.get("axes", range(rank))]
        roi = [0.0] * rank + [1.0] * rank
        for k, a in enumerate(axes):
            roi[a], roi[a + rank] = given[k], given[k + len(axes)]
    nearest = node.attrs.get("nearest_mode", "round_prefer_floor")
    if node.op_type == "Upsample":
        nearest = "floor"
    extra = node.attrs.get("extrapolation_value", 0.0)
    return ctx.emit(R.image.resize(x, size, scale, mode, coord, nearest, roi, extra))
