"""Layout operators: ``relax.layout_transform`` and ``relax.matmul_packed``.

``layout_transform(x, src_layout, dst_layout)`` moves the elements of ``x`` from one layout of
its axes to another (`kiln.topi.layout`: ``"NCHW"`` -> ``"NCHW16c"``, ``"OIHW"`` ->
``"OIHW16i32o"``, ``"KN"`` -> ``"NK64n"``); a block that does not divide its axis pads it with
zeros. Pattern ``INJECTIVE``. `kiln.relax.transform.AlterOpLayout` inserts it (at a model's
boundary, and for weights, where `FoldConstant` evaluates it at compile time).

``matmul_packed(x, panels, units)`` is ``x @ w`` for a ``K x units`` matrix ``w`` already packed
into column panels ``layout_transform(w, "KN", "NK<cols>n")`` (shape ``[panels, K, cols]``,
zero-padded past ``units`` columns): the CPU kernel of `kiln.topi.x86.dense` reads the panels
as they are instead of packing ``w`` on every call. ``x`` has rank 1 or more (leading axes
are batches). Pattern ``OUT_ELEMWISE_FUSABLE``.
"""

from __future__ import annotations

from typing import Any

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
    out_tensor,
    same_dtype,
    show,
    tensor_sinfo,
)
from kiln.relax.op.registry import register_op
from kiln.relax.struct_info import INT64, StructInfo, TensorStructInfo
from kiln.tir.expr import IntImm
from kiln.topi.layout import Layout, primal_extents, transformed_shape
from kiln.topi.layout import layout_transform as topi_layout_transform
from kiln.topi.nn.dense_packed import matmul_packed as topi_matmul_packed
from kiln.topi.tag import Pattern


def _layout(call: Call, key: str) -> Layout:
    try:
        return Layout.parse(call.attrs[key])
    except IRError as e:
        raise fail(call, str(e)) from None


def _infer_layout_transform(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 1)
    x = tensor_sinfo(call, 0, "data")
    src, dst = _layout(call, "src_layout"), _layout(call, "dst_layout")
    if sorted(src.primal) != sorted(dst.primal):
        raise fail(call, f"layouts {src.name!r} and {dst.name!r} have different axes")
    if x.ndim >= 0 and x.ndim != len(src.axes):
        raise fail(call, f"{describe(call.args[0])} does not have the rank of {src.name!r}")
    if x.dims is None:
        return TensorStructInfo(None, x.dtype, len(dst.axes))
    try:
        shape = transformed_shape(primal_extents(x.dims, src, describe(call.args[0])), dst)
    except IRError as e:
        raise fail(call, str(e)) from None
    return out_tensor([IntImm(INT64, d) if isinstance(d, int) else d for d in shape], x.dtype)


@register_op(
    "relax.layout_transform",
    infer=_infer_layout_transform,
    legalize=lambda call, args: topi_layout_transform(
        args[0], call.attrs["src_layout"], call.attrs["dst_layout"]
    ),
    pattern=Pattern.INJECTIVE,
)
def layout_transform(x: Expr, src_layout: str, dst_layout: str) -> Call:
    """``x`` (laid out as ``src_layout``) laid out as ``dst_layout`` (module docstring)."""
    for name in (src_layout, dst_layout):
        Layout.parse(name)
    return Call(
        Op.get("relax.layout_transform"),
        (as_expr(x),),
        attrs(src_layout=src_layout, dst_layout=dst_layout),
    )


def _infer_matmul_packed(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 2)
    x, p = tensor_sinfo(call, 0, "x"), tensor_sinfo(call, 1, "panels")
    dtype = same_dtype(call, [x, p])
    units = call.attrs["units"]
    if p.ndim not in (-1, 3) or x.ndim == 0:
        raise fail(
            call,
            f"needs x of rank 1 or more and panels [panels, K, cols], got {describe(call.args[0])}"
            f" and {describe(call.args[1])}",
        )
    if x.dims is None or p.dims is None:
        return TensorStructInfo(None, dtype, max(x.ndim, 1))
    npanels, k, cols = p.dims
    if dims_fit(x.dims[-1], k) is Fit.FAIL:
        raise fail(call, f"x has {show(x.dims[-1])} columns, the panels {show(k)} rows")
    if isinstance(npanels, IntImm) and isinstance(cols, IntImm):
        if not 0 < units <= npanels.value * cols.value:
            raise fail(call, f"units={units} do not fit {npanels.value} panels of {cols.value}")
    return out_tensor([*x.dims[:-1], IntImm(INT64, units)], dtype)


@register_op(
    "relax.matmul_packed",
    infer=_infer_matmul_packed,
    legalize=lambda call, args: topi_matmul_packed(args[0], args[1], call.attrs["units"]),
    pattern=Pattern.OUT_ELEMWISE_FUSABLE,
)
def matmul_packed(x: Expr, panels: Expr, units: int) -> Call:
    """``x @ w`` where ``panels`` holds ``w`` (``K x units``) as column panels (module
    docstring)."""
    if isinstance(units, bool) or not isinstance(units, int) or units < 1:
        raise IRError(f"relax.matmul_packed: units must be a positive int, got {units!r}")
    return Call(Op.get("relax.matmul_packed"), (as_expr(x), as_expr(panels)), attrs(units=units))
