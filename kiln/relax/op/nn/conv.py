"""Convolution and pooling over NCHW tensors (``relax.nn.conv2d``, ``max_pool2d``,
``avg_pool2d``, ``adaptive_avg_pool2d``).

Layouts are NCHW data and OIHW weights. ``padding`` is an int, ``(pad_h, pad_w)`` or
``(top, left, bottom, right)``. Output extent per spatial axis:
``(size + pad_lo + pad_hi - dilation * (k - 1) - 1) // stride + 1`` (rounded up with
``ceil_mode``, constant sizes only). Batch and spatial extents may be symbolic; channels and
windows must be constants. conv2d is ``OUT_ELEMWISE_FUSABLE``, pools ``COMM_REDUCE``.
"""

from __future__ import annotations

from typing import Any

from kiln import topi
from kiln.errors import IRError
from kiln.ir.op import Op
from kiln.relax.analysis.struct_info import Fit, dims_fit
from kiln.relax.expr import Call, Expr
from kiln.relax.op.common import (
    as_expr,
    attrs,
    check_arity,
    describe,
    fail,
    int_list,
    out_dims,
    out_dtype_attr,
    out_tensor,
    same_dtype,
    show,
    tensor_sinfo,
)
from kiln.relax.op.registry import register_op
from kiln.relax.struct_info import StructInfo, TensorStructInfo
from kiln.tir.expr import IntImm, PrimExpr
from kiln.topi.nn.window_any import adaptive_avg_pool2d as _adaptive
from kiln.topi.nn.window_any import conv2d_nchw_any, pool2d_any
from kiln.topi.tag import Pattern


def padding4(value: Any) -> tuple[int, int, int, int]:
    """``(top, left, bottom, right)`` from an int, a pair or a 4-tuple."""
    items = int_list(value, "padding", 2)
    if len(items) == 2:
        items = items * 2
    if len(items) != 4 or any(p < 0 for p in items):
        raise IRError(f"padding must be an int, a pair or 4 non-negative ints, got {value!r}")
    return items  # type: ignore[return-value]


def pair(value: Any, what: str) -> tuple[int, int]:
    items = int_list(value, what, 2)
    if len(items) != 2 or any(v < 1 for v in items):
        raise IRError(f"{what} must be a positive int or pair, got {value!r}")
    return items  # type: ignore[return-value]


def window_out(size: PrimExpr, k: int, s: int, lo: int, hi: int, d: int, ceil: bool) -> Any:
    """The output extent of a window sweep over ``size``."""
    span = size + (lo + hi - d * (k - 1) - 1)
    if not ceil:
        return span // s + 1
    if not isinstance(size, IntImm):
        raise IRError("ceil_mode=True needs constant spatial extents")
    n = -(-(size.value + lo + hi - d * (k - 1) - 1) // s) + 1
    if (n - 1) * s >= size.value + lo:
        n -= 1
    return n


def _nchw(call: Call, i: int, what: str) -> TensorStructInfo:
    s = tensor_sinfo(call, i, what)
    if s.ndim not in (-1, 4):
        raise fail(call, f"{what} must be 4-D (NCHW/OIHW), got {describe(call.args[i])}")
    return s


def _const(call: Call, d: PrimExpr, what: str) -> int:
    if not isinstance(d, IntImm):
        raise fail(call, f"{what} must be a constant, got {d}")
    return d.value


def _infer_conv2d(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 2)
    a = call.attrs
    if (a["data_layout"], a["kernel_layout"]) != ("NCHW", "OIHW"):
        raise fail(call, "only data_layout='NCHW' and kernel_layout='OIHW' are supported")
    data, weight = _nchw(call, 0, "data"), _nchw(call, 1, "weight")
    dtype = a["out_dtype"] or same_dtype(call, [data, weight])
    if data.dims is None or weight.dims is None:
        return TensorStructInfo(None, dtype, 4)
    n, c, h, w = data.dims
    o, cg, kh, kw = weight.dims
    groups = a["groups"]
    if dims_fit(c, cg * groups) is Fit.FAIL:
        raise fail(
            call,
            f"data {describe(call.args[0])} has {show(c)} channels but weight "
            f"{describe(call.args[1])} expects {show(cg)} per group x {groups} group(s)",
        )
    if isinstance(o, IntImm) and o.value % groups:
        raise fail(call, f"{o.value} output channels are not divisible by groups={groups}")
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = a["strides"], a["dilation"], a["padding"]
    oh = window_out(h, _const(call, kh, "kernel height"), sh, pt, pb, dh, False)
    ow = window_out(w, _const(call, kw, "kernel width"), sw, pl, pr, dw, False)
    return out_tensor([n, o, oh, ow], dtype)


def _legalize_conv2d(call: Call, args: list[Any]) -> Any:
    a = call.attrs
    data, weight = args
    out = call.struct_info
    same = a["out_dtype"] is None or str(a["out_dtype"]) == str(data.dtype)
    if same and all(isinstance(d, IntImm) for d in (*data.shape, *weight.shape)):
        return topi.nn.conv2d_nchw(
            data, weight, a["strides"], a["padding"], a["dilation"], a["groups"]
        )
    return conv2d_nchw_any(
        data,
        weight,
        out_dims(call),
        a["strides"],
        a["padding"],
        a["dilation"],
        a["groups"],
        out.dtype,
    )


@register_op(
    "relax.nn.conv2d",
    infer=_infer_conv2d,
    legalize=_legalize_conv2d,
    pattern=Pattern.OUT_ELEMWISE_FUSABLE,
)
def conv2d(
    data: Expr,
    weight: Expr,
    strides: Any = (1, 1),
    padding: Any = (0, 0),
    dilation: Any = (1, 1),
    groups: int = 1,
    data_layout: str = "NCHW",
    kernel_layout: str = "OIHW",
    out_layout: str | None = None,
    out_dtype: Any = None,
) -> Call:
    """2-D convolution (NCHW data, OIHW weight; ``groups`` for grouped / depthwise)."""
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise IRError(f"relax.nn.conv2d: groups must be a positive int, got {groups!r}")
    return Call(
        Op.get("relax.nn.conv2d"),
        (as_expr(data), as_expr(weight)),
        attrs(
            strides=pair(strides, "strides"),
            padding=padding4(padding),
            dilation=pair(dilation, "dilation"),
            groups=groups,
            data_layout=data_layout,
            kernel_layout=kernel_layout,
            out_layout=out_layout,
            out_dtype=out_dtype_attr(out_dtype),
        ),
    )


def _infer_pool(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 1)
    a = call.attrs
    if a["layout"] != "NCHW":
        raise fail(call, "only layout='NCHW' is supported")
    x = _nchw(call, 0, "data")
    if call.op.name.endswith("avg_pool2d") and not x.dtype.is_void and not x.dtype.is_float:
        raise fail(call, f"needs a float tensor, got {describe(call.args[0])}")
    if x.dims is None:
        return TensorStructInfo(None, x.dtype, 4)
    n, c, h, w = x.dims
    (kh, kw), (sh, sw), (dh, dw) = a["pool_size"], a["strides"], a["dilation"]
    pt, pl, pb, pr = a["padding"]
    try:
        oh = window_out(h, kh, sh, pt, pb, dh, a["ceil_mode"])
        ow = window_out(w, kw, sw, pl, pr, dw, a["ceil_mode"])
    except IRError as e:
        raise fail(call, str(e)) from None
    for e in (oh, ow):
        if isinstance(e, int) and e < 1 or isinstance(e, IntImm) and e.value < 1:
            raise fail(call, f"the window does not fit {describe(call.args[0])}")
    return out_tensor([n, c, oh, ow], x.dtype)


def _legalize_pool(call: Call, args: list[Any]) -> Any:
    a, x = call.attrs, args[0]
    static = all(isinstance(d, IntImm) for d in x.shape)
    if call.op.name.endswith("max_pool2d"):
        if static:
            return topi.nn.max_pool2d(
                x, a["pool_size"], a["strides"], a["padding"], a["dilation"], a["ceil_mode"]
            )
        kind = "max"
    else:
        if static and a["dilation"] == (1, 1):
            return topi.nn.avg_pool2d(
                x,
                a["pool_size"],
                a["strides"],
                a["padding"],
                a["ceil_mode"],
                a["count_include_pad"],
            )
        kind = "avg"
    return pool2d_any(
        x,
        kind,
        out_dims(call),
        a["pool_size"],
        a["strides"],
        a["padding"],
        a["dilation"],
        a["count_include_pad"],
    )


def _pool_builder(name: str, doc: str) -> Any:
    full = f"relax.nn.{name}"

    def builder(
        data: Expr,
        pool_size: Any = (1, 1),
        strides: Any = (1, 1),
        padding: Any = (0, 0, 0, 0),
        dilation: Any = (1, 1),
        ceil_mode: bool = False,
        count_include_pad: bool = False,
        layout: str = "NCHW",
        out_layout: str | None = None,
    ) -> Call:
        return Call(
            Op.get(full),
            (as_expr(data),),
            attrs(
                pool_size=pair(pool_size, "pool_size"),
                strides=pair(strides, "strides"),
                padding=padding4(padding),
                dilation=pair(dilation, "dilation"),
                ceil_mode=bool(ceil_mode),
                count_include_pad=bool(count_include_pad),
                layout=layout,
                out_layout=out_layout,
            ),
        )

    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = doc
    register_op(full, infer=_infer_pool, legalize=_legalize_pool, pattern=Pattern.COMM_REDUCE)(
        builder
    )
    return builder


max_pool2d = _pool_builder("max_pool2d", "The maximum over each window.")
avg_pool2d = _pool_builder("avg_pool2d", "The mean over each window.")


def _infer_adaptive(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 1)
    x = _nchw(call, 0, "data")
    if not x.dtype.is_void and not x.dtype.is_float:
        raise fail(call, f"needs a float tensor, got {describe(call.args[0])}")
    size = call.attrs["output_size"]
    if x.dims is None:
        return TensorStructInfo(None, x.dtype, 4)
    n, c, h, w = x.dims
    oh, ow = (h, w) if size is None else size
    return out_tensor([n, c, oh, ow], x.dtype)


def _legalize_adaptive(call: Call, args: list[Any]) -> Any:
    out = out_dims(call)
    if all(isinstance(d, int) and d == 1 for d in out[2:]):
        return topi.nn.global_avg_pool2d(args[0])
    return _adaptive(args[0], out[2:])


@register_op(
    "relax.nn.adaptive_avg_pool2d",
    infer=_infer_adaptive,
    legalize=_legalize_adaptive,
    pattern=Pattern.COMM_REDUCE,
)
def adaptive_avg_pool2d(
    data: Expr, output_size: Any = None, layout: str = "NCHW", out_layout: str | None = None
) -> Call:
    """The mean over adaptive windows giving an ``output_size`` spatial shape (None: same)."""
    size = None if output_size is None else pair(output_size, "output_size")
    return Call(
        Op.get("relax.nn.adaptive_avg_pool2d"),
        (as_expr(data),),
        attrs(output_size=size, layout=layout, out_layout=out_layout),
    )
