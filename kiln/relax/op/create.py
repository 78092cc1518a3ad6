"""Tensor creation: ``full zeros ones`` (from a shape), ``full_like zeros_like ones_like`` (from
a tensor) and ``arange``.

``full``'s fill value is a 0-d tensor (a Python number becomes a constant); the dtype is the one
given, else the fill value's. ``arange(start, end, step)`` takes numbers or prim values (symbolic
bounds give a symbolic length ``ceil((end - start) / step)``; integers only). Pattern:
``ELEMWISE`` (``arange``: ``INJECTIVE``).
"""

from __future__ import annotations

import math
from typing import Any

from kiln import topi
from kiln.errors import IRError
from kiln.ir.dtype import DataType
from kiln.ir.op import Op
from kiln.relax.analysis.struct_info import simplify_dim
from kiln.relax.expr import Call, Expr, PrimValue, ShapeExpr, const
from kiln.relax.op.common import (
    as_expr,
    attrs,
    check_arity,
    describe,
    fail,
    out_dims,
    out_tensor,
    prim_value,
    shape_rank,
    shape_values,
    tensor_sinfo,
)
from kiln.relax.op.registry import register_op
from kiln.relax.struct_info import INT64, StructInfo, TensorStructInfo
from kiln.tir.expr import FloatImm, IntImm, Max, PrimExpr
from kiln.topi.tag import Pattern


def _shape_arg(shape: Any) -> Expr:
    if isinstance(shape, Expr):
        return shape
    return ShapeExpr(list(shape) if isinstance(shape, (list, tuple)) else [shape])


def _dtype_attr(dtype: Any) -> str | None:
    return None if dtype is None else str(DataType.parse(dtype))


def _from_shape(call: Call, dtype: Any) -> StructInfo:
    dims = shape_values(call, 0)
    if dims is None:
        return TensorStructInfo(None, dtype, shape_rank(call, 0))
    return out_tensor(dims, dtype)


def _infer_full(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 2)
    value = tensor_sinfo(call, 1, "fill_value")
    if value.ndim not in (-1, 0):
        raise fail(call, f"fill_value must be a 0-d tensor, got {describe(call.args[1])}")
    return _from_shape(call, call.attrs.get("dtype") or value.dtype)


@register_op(
    "relax.full",
    infer=_infer_full,
    legalize=lambda call, args: topi.fill_from(args[0], args[1], call.struct_info.dtype),
    pattern=Pattern.ELEMWISE,
)
def full(shape: Any, fill_value: Any, dtype: Any = None) -> Call:
    """A tensor of ``shape`` filled with ``fill_value``."""
    value = fill_value if isinstance(fill_value, Expr) else const(fill_value, dtype)
    return Call(Op.get("relax.full"), (_shape_arg(shape), value), attrs(dtype=_dtype_attr(dtype)))


def _infer_fill(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 1)
    return _from_shape(call, call.attrs["dtype"])


def _make_fill(name: str, value: float, doc: str) -> Any:
    full_name = f"relax.{name}"

    def builder(shape: Any, dtype: Any = "float32") -> Call:
        return Call(Op.get(full_name), (_shape_arg(shape),), attrs(dtype=_dtype_attr(dtype)))

    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = doc
    register_op(
        full_name,
        infer=_infer_fill,
        legalize=lambda call, args: topi.full(args[0], value, call.attrs["dtype"]),
        pattern=Pattern.ELEMWISE,
    )(builder)
    return builder


zeros = _make_fill("zeros", 0, "A tensor of ``shape`` filled with 0.")
ones = _make_fill("ones", 1, "A tensor of ``shape`` filled with 1.")


def _infer_like(call: Call, ctx: Any) -> StructInfo:
    x = tensor_sinfo(call, 0, "the operand")
    if len(call.args) == 2:
        value = tensor_sinfo(call, 1, "fill_value")
        if value.ndim not in (-1, 0):
            raise fail(call, f"fill_value must be a 0-d tensor, got {describe(call.args[1])}")
    dtype = call.attrs.get("dtype") or x.dtype
    return TensorStructInfo(x.shape, dtype, x.ndim)


@register_op(
    "relax.full_like",
    infer=_infer_like,
    legalize=lambda call, args: topi.full_like(args[0], args[1], call.struct_info.dtype),
    pattern=Pattern.ELEMWISE,
)
def full_like(x: Expr, fill_value: Any, dtype: Any = None) -> Call:
    """A tensor like ``x`` filled with ``fill_value``."""
    value = fill_value if isinstance(fill_value, Expr) else const(fill_value, dtype)
    return Call(Op.get("relax.full_like"), (as_expr(x), value), attrs(dtype=_dtype_attr(dtype)))


def _make_like(name: str, value: float, doc: str) -> Any:
    full_name = f"relax.{name}"

    def builder(x: Expr, dtype: Any = None) -> Call:
        return Call(Op.get(full_name), (as_expr(x),), attrs(dtype=_dtype_attr(dtype)))

    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = doc
    register_op(
        full_name,
        infer=lambda call, ctx: (check_arity(call, 1), _infer_like(call, ctx))[1],
        legalize=lambda call, args: topi.full_like(args[0], value, call.struct_info.dtype),
        pattern=Pattern.ELEMWISE,
    )(builder)
    return builder


zeros_like = _make_like("zeros_like", 0, "Zeros shaped like ``x``.")
ones_like = _make_like("ones_like", 1, "Ones shaped like ``x``.")


def _arange_length(call: Call, start: Any, end: Any, step: Any, dtype: DataType) -> PrimExpr:
    if all(isinstance(v, (IntImm, FloatImm)) for v in (start, end, step)):
        if step.value == 0:
            raise fail(call, "step cannot be 0")
        n = math.ceil((end.value - start.value) / step.value)
        return IntImm(INT64, max(n, 0))
    if not dtype.is_integer:
        raise fail(call, "symbolic bounds need an integer dtype")
    s = [v if v.dtype == INT64 else v.astype(INT64) for v in (start, end, step)]
    if isinstance(step, IntImm) and step.value < 0:  # ceil((end - start) / step), stepping back
        return simplify_dim(Max((s[0] - s[1] + (-step.value - 1)) // -step.value, IntImm(INT64, 0)))
    if isinstance(step, IntImm) and step.value == 0:
        raise fail(call, "step cannot be 0")
    return simplify_dim(Max((s[1] - s[0] + s[2] - 1) // s[2], IntImm(INT64, 0)))


def _infer_arange(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 3)
    values = [prim_value(call, i) for i in range(3)]
    dtype = DataType.parse(call.attrs["dtype"])
    if any(v is None for v in values):
        return TensorStructInfo(None, dtype, 1)
    return out_tensor([_arange_length(call, *values, dtype)], dtype)


@register_op(
    "relax.arange",
    infer=_infer_arange,
    legalize=lambda call, args: topi.arange(
        args[0], out_dims(call)[0], args[2], call.struct_info.dtype
    ),
    pattern=Pattern.INJECTIVE,
)
def arange(start: Any, end: Any = None, step: Any = 1, dtype: Any = None) -> Call:
    """``[start, start + step, ...)`` up to ``end`` (one argument: ``[0, start)``)."""
    if end is None:
        start, end = 0, start
    values = [start, end, step]
    if dtype is None:
        is_float = any(isinstance(v, float) for v in values) or any(
            isinstance(v, PrimValue) and v.value.dtype.is_float for v in values
        )
        dtype = "float32" if is_float else "int64"
    dt = DataType.parse(dtype)

    def pv(v: Any) -> Expr:
        if isinstance(v, Expr):
            return v
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return PrimValue(
                FloatImm("float64", float(v)) if dt.is_float else IntImm(INT64, int(v))
            )
        raise IRError(f"relax.arange: bounds must be numbers or prim values, got {v!r}")

    return Call(Op.get("relax.arange"), tuple(pv(v) for v in values), attrs(dtype=str(dt)))
