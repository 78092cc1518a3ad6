"""Convolution and pooling over NCHW tensors (``relax.nn.conv2d``, ``max_pool2d``,
``avg_pool2d``, ``adaptive_avg_pool2d``).

Layouts are NCHW data and OIHW weights. ``padding`` is an int, ``(pad_h, pad_w)`` or
``(top, left, bottom, right)``. Output extent per spatial axis:
``(size + pad_lo + pad_hi - dilation * (k - 1) - 1) // stride + 1`` (rounded up with
``ceil_mode``, constant sizes only). Batch and spatial extents may be symbolic; channels and
windows must be constants. conv2d is ``OUT_ELEMWISE_FUSABLE``, pools ``COMM_REDUCE``.

Channel-blocked layouts (`kiln.topi.layout`; `kiln.relax.transform.AlterOpLayout` picks them for
the CPU kernels): conv2d takes ``NCHW<cb>c`` data, an ``OIHW<ki>i<ob>o`` weight and gives
``NCHW<ob>c`` (``out_layout``); max_pool2d / avg_pool2d take ``layout="NCHW<b>c"`` (constant
shapes). The values are those of the unblocked operator on the unblocked tensors.
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
from kiln.relax.struct_info import INT64, StructInfo, TensorStructInfo
from kiln.tir.expr import IntImm, PrimExpr
from kiln.topi.layout import Layout
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


def conv_blocks(call: Call) -> tuple[int, int, int] | None:
    """``(cb, ki, ob)`` of a channel-blocked conv2d call (``NCHW{cb}c`` data, ``OIHW{ki}i{ob}o``
    kernel, ``NCHW{ob}c`` output), None for NCHW / OIHW; an error for any other layouts."""
    a = call.attrs
    names = (a["data_layout"], a["kernel_layout"], a["out_layout"] or a["data_layout"])
    if names == ("NCHW", "OIHW", "NCHW"):
        return None
    try:
        data, kernel, out = (Layout.parse(x).axes for x in names)
    except IRError:
        data = kernel = out = ()
    spatial = (("H", 0), ("W", 0))
    if (
        len(data) == len(out) == 5
        and len(kernel) == 6
        and data[:4] == out[:4] == (("N", 0), ("C", 0), *spatial)
        and kernel[:4] == (("O", 0), ("I", 0), *spatial)
        and (data[4][0], kernel[4][0], kernel[5][0], out[4][0]) == ("C", "I", "O", "C")
        and kernel[5][1] == out[4][1]
    ):
        return data[4][1], kernel[4][1], kernel[5][1]
    raise fail(
        call,
        f"layouts {names} are not supported: use NCHW / OIHW / NCHW, or channel blocks "
        "NCHW<cb>c / OIHW<ki>i<ob>o / NCHW<ob>c",
    )


def _infer_blocked(call: Call, blocks: tuple[int, int, int]) -> StructInfo:
    cb, ki, ob = blocks
    a = call.attrs
    data, weight = tensor_sinfo(call, 0, "data"), tensor_sinfo(call, 1, "weight")
    if data.ndim not in (-1, 5) or weight.ndim not in (-1, 6):
        raise fail(
            call, f"blocked layouts need 5-D data and 6-D weight, got {describe(call.args[0])}"
        )
    dtype = a["out_dtype"] or same_dtype(call, [data, weight])
    if data.dims is None or weight.dims is None:
        return TensorStructInfo(None, dtype, 5)
    n, c_out, h, w, cb_d = data.dims
    o_out, i_out, kh, kw, ki_w, ob_w = weight.dims
    for d, want, what in ((cb_d, cb, "data"), (ki_w, ki, "weight"), (ob_w, ob, "weight")):
        if not isinstance(d, IntImm) or d.value != want:
            raise fail(
                call,
                f"{what} {describe(call.args[0 if what == 'data' else 1])} does not "
                f"have the blocks of its layout",
            )
    c = _const(call, c_out, "channel blocks") * cb
    cg = _const(call, i_out, "weight input blocks") * ki
    if cg * a["groups"] != c:
        raise fail(call, f"{c} channels do not fit {cg} per group x groups={a['groups']}")
    if (_const(call, o_out, "weight output blocks") * ob) % a["groups"]:
        raise fail(call, f"output channels are not divisible by groups={a['groups']}")
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = a["strides"], a["dilation"], a["padding"]
    oh = window_out(h, _const(call, kh, "kernel height"), sh, pt, pb, dh, False)
    ow = window_out(w, _const(call, kw, "kernel width"), sw, pl, pr, dw, False)
    return out_tensor([n, o_out, oh, ow, IntImm(INT64, ob)], dtype)


def _infer_conv2d(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 2)
    a = call.attrs
    blocks = conv_blocks(call)
    if blocks is not None:
        return _infer_blocked(call, blocks)
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
    if conv_blocks(call) is not None:
        if a["out_dtype"] is not None and str(a["out_dtype"]) != str(data.dtype):
            raise fail(call, "blocked layouts compute in the data's dtype (no out_dtype)")
        return topi.nn.conv2d_nchwc(
            data, weight, a["strides"], a["padding"], a["dilation"], a["groups"]
        )
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


def pool_block(call: Call) -> int:
    """The channel block of a pool's ``NCHW{b}c`` layout (0 for ``NCHW``)."""
    layout = call.attrs["layout"]
    if layout != "NCHW":
        try:
            axes = Layout.parse(layout).axes
        except IRError:
            axes = ()
        if axes[:4] != (("N", 0), ("C", 0), ("H", 0), ("W", 0)) or len(axes) != 5:
            raise fail(call, f"layout {layout!r} is not supported: use NCHW or NCHW<b>c")
        if axes[4][0] != "C" or call.attrs.get("out_layout") not in (None, layout):
            raise fail(call, f"layout {layout!r} is not supported: use NCHW or NCHW<b>c")
        return axes[4][1]
    return 0


def _infer_pool(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 1)
    a = call.attrs
    block = pool_block(call)
    x = tensor_sinfo(call, 0, "data")
    if x.ndim not in (-1, 5 if block else 4):
        raise fail(call, f"{describe(call.args[0])} does not have the rank of {a['layout']!r}")
    if call.op.name.endswith("avg_pool2d") and not x.dtype.is_void and not x.dtype.is_float:
        raise fail(call, f"needs a float tensor, got {describe(call.args[0])}")
    if x.dims is None:
        return TensorStructInfo(None, x.dtype, 5 if block else 4)
    n, c, h, w = x.dims[:4]
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
    return out_tensor([n, c, oh, ow, *x.dims[4:]], x.dtype)


def _legalize_pool(call: Call, args: list[Any]) -> Any:
    a, x = call.attrs, args[0]
    static = all(isinstance(d, IntImm) for d in x.shape[1:])  # NOTE: the batch may be symbolic
    if pool_block(call) and not static:
        raise fail(call, "a channel-blocked pool needs constant shapes except the batch")
    max_pool = call.op.name.endswith("max_pool2d")
    if static and max_pool:
        return topi.nn.max_pool2d(
            x, a["pool_size"], a["strides"], a["padding"], a["dilation"], a["ceil_mode"]
        )
    if static:
        return topi.nn.avg_pool2d(
            x,
            a["pool_size"],
            a["strides"],
            a["padding"],
            a["ceil_mode"],
            a["count_include_pad"],
            a["dilation"],
        )
    return pool2d_any(
        x,
        "max" if max_pool else "avg",
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
