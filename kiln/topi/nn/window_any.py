"""Convolution and pooling over NCHW tensors whose batch and spatial extents may be symbolic.

The caller (the graph level's struct info inference) knows the output shape and passes it in;
channels and window sizes are constants. For fixed shapes `kiln.topi.nn.conv2d_nchw` and the
pools of `kiln.topi.nn.pool` are the ones to use (they carry the tuned CPU schedules). Index
arithmetic uses the dtype of the data's shape throughout (int64 for symbolic shapes).

``padding`` is ``(top, left, bottom, right)``; padded positions read 0 (convolution, average)
or are skipped (maximum). Every pooling window must hold an input element (`check_pool_padding`).
``adaptive_avg_pool2d`` averages, for output cell ``i`` of ``n`` over
an input axis of extent ``H``, the input rows ``floor(i*H/n)`` to ``ceil((i+1)*H/n)``.
"""

from __future__ import annotations

from typing import Any

from kiln import te
from kiln.ir.dtype import DataType
from kiln.te import Tensor
from kiln.tir.expr import Cast, FloorDiv, IntImm, PrimExpr, convert
from kiln.topi import tag
from kiln.topi.nn.pool import check_pool_padding, tap_count, tap_in_input
from kiln.topi.reduce import lowest, max_reducer
from kiln.topi.tag import Pattern, attrs_for
from kiln.topi.utils import check_tensor


def _inside(h: PrimExpr, w: PrimExpr, x: Tensor) -> PrimExpr:
    H, W = x.shape[2], x.shape[3]
    return (h >= 0) & (h < H) & (w >= 0) & (w < W)


def _axis(extent: int, dt: DataType, name: str) -> Any:
    return te.reduce_axis(convert(extent, dt), name=name)


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
    dt = DataType.parse(out_dtype) if out_dtype is not None else data.dtype
    it = data.shape[0].dtype
    rc, ry, rx = _axis(cg, it, "rc"), _axis(kh, it, "ry"), _axis(kw, it, "rx")
    (sh, sw), (dh, dw), (pt, pl) = stride, dilation, padding[:2]
    zero = convert(0.0, dt) if dt.is_float else convert(0, dt)

    def body(n: Any, o: Any, y: Any, x: Any) -> Any:
        c = rc if groups == 1 else FloorDiv(o, convert(og, it)) * cg + rc
        h = y * sh + ry * dh - pt
        w = x * sw + rx * dw - pl
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
    """``"max"`` or ``"avg"`` pooling of NCHW ``x`` into ``out_shape`` (which `window_out`
    computed: over symbolic extents, the floor rule). Reads are clipped to the input and the
    average counts taps as `kiln.topi.nn.pool` does (`tap_in_input`, `tap_count`)."""
    x = check_tensor(f"{kind}_pool2d", x)
    out_hw = (out_shape[2], out_shape[3])
    check_pool_padding(f"{kind}_pool2d", x, pool_size, dilation, padding, strides, out_hw)
    (kh, kw), (sh, sw), (dh, dw) = pool_size, strides, dilation
    pt, pl, pb, pr = padding
    it = x.shape[0].dtype
    rh, rw = _axis(kh, it, "rh"), _axis(kw, it, "rw")

    def read(n: Any, c: Any, oh: Any, ow: Any, fill: PrimExpr) -> PrimExpr:
        h = oh * sh + rh * dh - pt
        w = ow * sw + rw * dw - pl
        v = x[n, c, h, w]
        tests = [
            t
            for t in (
                tap_in_input(h, x.shape[2], out_hw[0], kh, sh, pt, pb, dh),
                tap_in_input(w, x.shape[3], out_hw[1], kw, sw, pl, pr, dw),
            )
            if t is not None
        ]
        if not tests:
            return v
        return te.if_then_else(tests[0] if len(tests) == 1 else tests[0] & tests[1], v, fill)

    if kind == "max":
        low = lowest(x.dtype)
        return te.compute(
            tuple(out_shape),
            lambda n, c, oh, ow: max_reducer(read(n, c, oh, ow, low), axis=[rh, rw]),
            name=name,
            tag=tag.POOL,
            attrs=tag.attrs_for(tag.POOL),
        )
    zero = convert(0.0, x.dtype)
    total = te.compute(
        tuple(out_shape),
        lambda n, c, oh, ow: te.sum(read(n, c, oh, ow, zero), axis=[rh, rw]),
        name=f"{name}_sum",
        tag=tag.POOL,
        attrs=tag.attrs_for(tag.POOL),
    )

    def favg(n: Any, c: Any, oh: Any, ow: Any) -> Any:
        inc = count_include_pad
        ch = tap_count(oh, sh, pt, x.shape[2], pb, kh, dh, inc)
        cw = tap_count(ow, sw, pl, x.shape[3], pr, kw, dw, inc)
        return total[n, c, oh, ow] / Cast(x.dtype, ch * cw)

    return te.compute(
        total.shape, favg, name=name, tag=tag.ELEMWISE, attrs=tag.attrs_for(tag.ELEMWISE)
    )


def adaptive_avg_pool2d(x: Tensor, output_size: Any, name: str = "T_adaptive_pool") -> Tensor:
    """The mean over adaptive windows so that the output has ``output_size`` (oh, ow)."""
    x = check_tensor("adaptive_avg_pool2d", x)
    it = x.shape[0].dtype
    oh, ow = (convert(v, it) if isinstance(v, int) else v for v in output_size)
    H, W = x.shape[2], x.shape[3]
    rh = te.reduce_axis(_max_window(H, oh), name="rh")
    rw = te.reduce_axis(_max_window(W, ow), name="rw")

    def bounds(i: PrimExpr, size: PrimExpr, n: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
        return FloorDiv(i * size, n), FloorDiv((i + 1) * size + n - 1, n)

    def fsum(b: Any, c: Any, i: Any, j: Any) -> Any:
        hs, he = bounds(i, H, oh)
        ws, we = bounds(j, W, ow)
        h, w = hs + rh, ws + rw
        ok = (h < he) & (w < we)
        return te.sum(te.if_then_else(ok, x[b, c, h, w], convert(0.0, x.dtype)), axis=[rh, rw])

    shape = (x.shape[0], x.shape[1], oh, ow)
    total = te.compute(shape, fsum, name=f"{name}_sum", tag=tag.POOL, attrs=tag.attrs_for(tag.POOL))

    def favg(b: Any, c: Any, i: Any, j: Any) -> Any:
        hs, he = bounds(i, H, oh)
        ws, we = bounds(j, W, ow)
        return total[b, c, i, j] / Cast(x.dtype, (he - hs) * (we - ws))

    return te.compute(shape, favg, name=name, tag=tag.ELEMWISE, attrs=tag.attrs_for(tag.ELEMWISE))


def _max_window(size: PrimExpr, n: PrimExpr) -> PrimExpr:
    """An upper bound of the adaptive window extent: ``ceil(size / n) + 1``."""
    if isinstance(size, IntImm) and isinstance(n, IntImm):
        extra = 1 if size.value % n.value else 0
        return convert(-(-size.value // n.value) + extra, size.dtype)
    return FloorDiv(size + n - 1, n) + 1
