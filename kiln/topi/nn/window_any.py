"""Convolution and pooling over NCHW tensors whose batch and spatial extents may be symbolic.

The caller (the graph level's struct info inference) knows the output shape and passes it in;
channels and window sizes are constants. For fixed shapes `kiln.topi.nn.conv2d_nchw` and the
pools of `kiln.topi.nn.pool` are the ones to use (they carry the tuned CPU schedules).

``padding`` is ``(top, left, bottom, right)``; padded positions read 0 (convolution, average)
or are skipped (maximum). ``adaptive_avg_pool2d`` averages, for output cell ``i`` of ``n`` over
an input axis of extent ``H``, the input rows ``floor(i*H/n)`` to ``ceil((i+1)*H/n)``.
"""

from __future__ import annotations

from typing import Any

from kiln import te
from kiln.te import Tensor
from kiln.tir.expr import Cast, FloorDiv, IntImm, Max, Min, PrimExpr, convert
from kiln.tir.op import min_value
from kiln.topi import tag
from kiln.topi.tag import Pattern, attrs_for
from kiln.topi.utils import check_tensor


def _c(v: int, like: PrimExpr) -> PrimExpr:
    return convert(v, like.dtype)


def _inside(h: PrimExpr, w: PrimExpr, x: Tensor) -> PrimExpr:
    H, W = x.shape[2], x.shape[3]
    return (h >= _c(0, h)) & (h < _cast(H, h)) & (w >= _c(0, w)) & (w < _cast(W, w))


def _cast(e: PrimExpr, like: PrimExpr) -> PrimExpr:
    return e if e.dtype == like.dtype else Cast(like.dtype, e)


def conv2d_nchw_any(
    data: Tensor,
    kernel: Tensor,
    out_shape: Any,
    stride: tuple[int, int],
    padding: tuple[int, int, int, int],
    dilation: tuple[int, int],
    groups: int,
    out_dtype: Any = None,
    name: str = "conv2d_nchw_any",
) -> Tensor:
    """2-D convolution of NCHW ``data`` with an OIHW ``kernel`` into ``out_shape``."""
    data, kernel = check_tensor("conv2d", data), check_tensor("conv2d", kernel)
    o_total, cg, kh, kw = (int(d.value) for d in kernel.shape)  # type: ignore[attr-defined]
    og = o_total // groups
    dt = out_dtype or data.dtype
    rc = te.reduce_axis(cg, name="rc")
    ry = te.reduce_axis(kh, name="ry")
    rx = te.reduce_axis(kw, name="rx")
    (sh, sw), (dh, dw), (pt, pl) = stride, dilation, padding[:2]
    zero = convert(0.0, dt) if dt.is_float else convert(0, dt)

    def body(n: Any, o: Any, y: Any, x: Any) -> Any:
        c = rc if groups == 1 else _cast(FloorDiv(o, _c(og, o)), rc) * cg + rc
        h = _cast(y, ry) * sh + ry * dh - pt
        w = _cast(x, rx) * sw + rx * dw - pl
        src = data[n, c, h, w]
        src = src if src.dtype == dt else Cast(dt, src)
        k = kernel[o, rc, ry, rx]
        prod = src * (k if k.dtype == dt else Cast(dt, k))
        if any(padding):
            prod = te.if_then_else(_inside(h, w, data), prod, zero)
        return te.sum(prod, axis=[rc, ry, rx])

    attrs = attrs_for("conv2d_any", Pattern.OUT_ELEMWISE_FUSABLE)
    return te.compute(tuple(out_shape), body, name=name, tag="conv2d_any", attrs=attrs)


def pool2d_any(
    x: Tensor,
    kind: str,
    out_shape: Any,
    pool_size: tuple[int, int],
    strides: tuple[int, int],
    padding: tuple[int, int, int, int],
    dilation: tuple[int, int] = (1, 1),
    count_include_pad: bool = True,
    name: str = "T_pool2d",
) -> Tensor:
    """``"max"`` or ``"avg"`` pooling of NCHW ``x`` into ``out_shape``."""
    x = check_tensor(f"{kind}_pool2d", x)
    (kh, kw), (sh, sw), (dh, dw), (pt, pl, pb, pr) = pool_size, strides, dilation, padding
    rh = te.reduce_axis(kh, name="rh")
    rw = te.reduce_axis(kw, name="rw")
    padded = any(padding)

    def pos(n: Any, c: Any, oh: Any, ow: Any) -> tuple[PrimExpr, PrimExpr, PrimExpr]:
        h = _cast(oh, rh) * sh + rh * dh - pt
        w = _cast(ow, rw) * sw + rw * dw - pl
        return h, w, x[n, c, h, w]

    if kind == "max":

        def fmax(n: Any, c: Any, oh: Any, ow: Any) -> Any:
            h, w, v = pos(n, c, oh, ow)
            v = te.if_then_else(_inside(h, w, x), v, min_value(x.dtype)) if padded else v
            return te.max(v, axis=[rh, rw])

        return te.compute(
            tuple(out_shape), fmax, name=name, tag=tag.POOL, attrs=tag.attrs_for(tag.POOL)
        )
    zero = convert(0.0, x.dtype)

    def fsum(n: Any, c: Any, oh: Any, ow: Any) -> Any:
        h, w, v = pos(n, c, oh, ow)
        v = te.if_then_else(_inside(h, w, x), v, zero) if padded else v
        return te.sum(v, axis=[rh, rw])

    total = te.compute(
        tuple(out_shape), fsum, name=f"{name}_sum", tag=tag.POOL, attrs=tag.attrs_for(tag.POOL)
    )

    def count(o: PrimExpr, s: int, p_lo: int, size: PrimExpr, p_hi: int, k: int) -> PrimExpr:
        start = o * s - p_lo
        size = _cast(size, o)
        end = Min(start + k, size + p_hi)
        if count_include_pad:
            return end - start
        return Min(end, size) - Max(start, _c(0, o))

    def favg(n: Any, c: Any, oh: Any, ow: Any) -> Any:
        ch = count(oh, sh, pt, x.shape[2], pb, kh)
        cw = count(ow, sw, pl, x.shape[3], pr, kw)
        return total[n, c, oh, ow] / Cast(x.dtype, ch * _cast(cw, ch))

    return te.compute(
        tuple(out_shape), favg, name=name, tag=tag.ELEMWISE, attrs=tag.attrs_for(tag.ELEMWISE)
    )


def adaptive_avg_pool2d(x: Tensor, output_size: Any, name: str = "T_adaptive_pool") -> Tensor:
    """The mean over adaptive windows so that the output has ``output_size`` (oh, ow)."""
    x = check_tensor("adaptive_avg_pool2d", x)
    oh, ow = (convert(v, "int64") if isinstance(v, int) else v for v in output_size)
    H, W = x.shape[2], x.shape[3]
    kh, kw = _max_window(H, oh), _max_window(W, ow)
    rh = te.reduce_axis(kh, name="rh")
    rw = te.reduce_axis(kw, name="rw")

    def bounds(i: PrimExpr, size: PrimExpr, n: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
        i, size, n = _cast(i, n), _cast(size, n), n
        start = FloorDiv(i * size, n)
        end = FloorDiv((i + 1) * size + n - 1, n)
        return start, end

    def fsum(b: Any, c: Any, i: Any, j: Any) -> Any:
        hs, he = bounds(i, H, oh)
        ws, we = bounds(j, W, ow)
        h, w = hs + _cast(rh, hs), ws + _cast(rw, ws)
        ok = (h < he) & (w < we)
        return te.sum(te.if_then_else(ok, x[b, c, h, w], convert(0.0, x.dtype)), axis=[rh, rw])

    shape = (x.shape[0], x.shape[1], oh, ow)
    total = te.compute(shape, fsum, name=f"{name}_sum", tag=tag.POOL, attrs=tag.attrs_for(tag.POOL))

    def favg(b: Any, c: Any, i: Any, j: Any) -> Any:
        hs, he = bounds(i, H, oh)
        ws, we = bounds(j, W, ow)
        return total[b, c, i, j] / Cast(x.dtype, (he - hs) * _cast(we - ws, hs))

    return te.compute(shape, favg, name=name, tag=tag.ELEMWISE, attrs=tag.attrs_for(tag.ELEMWISE))


def _max_window(size: PrimExpr, n: PrimExpr) -> PrimExpr:
    """An upper bound of the adaptive window extent: ``ceil(size / n) + 1``."""
    if isinstance(size, IntImm) and isinstance(n, IntImm):
        return convert(-(-size.value // n.value) + (1 if size.value % n.value else 0), "int64")
    s, nn = _cast(size, n), n
    return FloorDiv(s + nn - 1, nn) + 1
