"""Reductions over axes: ``sum mean max min prod variance`` and ``argmax argmin``.

``axis`` is None (every axis), an int or a list of ints (``argmax`` / ``argmin``: None or one
int, None giving the flat index); ``keepdims`` keeps reduced axes with extent 1. ``mean`` and
``variance`` take float tensors; ``argmax`` / ``argmin`` give ``int64``. Pattern:
``COMM_REDUCE``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kiln import topi
from kiln.ir.op import Op
from kiln.relax.expr import Call, Expr
from kiln.relax.op.common import (
    as_expr,
    attrs,
    check_arity,
    normalize_axes,
    out_tensor,
    require_float,
    tensor_sinfo,
)
from kiln.relax.op.registry import register_op
from kiln.relax.struct_info import INT64, IntImm, StructInfo, TensorStructInfo
from kiln.topi.tag import Pattern


def _axes_attr(axis: Any) -> tuple[int, ...] | None:
    if axis is None:
        return None
    return (axis,) if isinstance(axis, int) else tuple(axis)


def reduce_sinfo(call: Call, dtype: Any = None) -> StructInfo:
    """The struct info of reducing the operand over ``attrs["axis"]``."""
    check_arity(call, 1)
    x = tensor_sinfo(call, 0, "the operand")
    keep = bool(call.attrs.get("keepdims", False))
    out_dtype = x.dtype if dtype is None else dtype
    axes = normalize_axes(call, call.attrs.get("axis"), x.ndim)
    if axes is None:
        return TensorStructInfo(None, out_dtype, -1)
    ndim = x.ndim if keep else x.ndim - len(axes)
    dims = x.dims
    if dims is None:
        return TensorStructInfo(None, out_dtype, ndim)
    out = []
    for d, ext in enumerate(dims):
        if d not in axes:
            out.append(ext)
        elif keep:
            out.append(IntImm(INT64, 1))
    return out_tensor(out, out_dtype)


def make_reduce(name: str, fn: Callable[..., Any], floats: bool, doc: str) -> Callable:
    """Register the reduction ``relax.<name>`` computed by topi function ``fn``."""
    full = f"relax.{name}"

    def builder(x: Expr, axis: Any = None, keepdims: bool = False) -> Call:
        return Call(Op.get(full), (as_expr(x),), attrs(axis=_axes_attr(axis), keepdims=keepdims))

    def infer(call: Call, ctx: Any) -> StructInfo:
        if floats:
            require_float(call, tensor_sinfo(call, 0, "the operand"))
        return reduce_sinfo(call)

    def legalize(call: Call, args: list[Any]) -> Any:
        axis = call.attrs.get("axis")
        return fn(args[0], list(axis) if axis is not None else None, call.attrs["keepdims"])

    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = doc
    register_op(full, infer=infer, legalize=legalize, pattern=Pattern.COMM_REDUCE)(builder)
    return builder


sum = make_reduce("sum", topi.sum, False, "The sum over ``axis``.")  # noqa: A001
mean = make_reduce("mean", topi.mean, True, "The mean over ``axis``.")
max = make_reduce("max", topi.max, False, "The maximum over ``axis``.")  # noqa: A001
min = make_reduce("min", topi.min, False, "The minimum over ``axis``.")  # noqa: A001
prod = make_reduce("prod", topi.prod, False, "The product over ``axis``.")
variance = make_reduce("variance", topi.variance, True, "The population variance.")


def make_arg_reduce(name: str, fn: Callable[..., Any], doc: str) -> Callable:
    """Register ``relax.<name>``: the int64 index of an extreme element."""
    full = f"relax.{name}"

    def builder(x: Expr, axis: int | None = None, keepdims: bool = False) -> Call:
        return Call(Op.get(full), (as_expr(x),), attrs(axis=axis, keepdims=keepdims))

    def infer(call: Call, ctx: Any) -> StructInfo:
        axis = call.attrs.get("axis")
        if axis is not None and not isinstance(axis, int):
            raise TypeError(f"{full}: axis must be None or one int, got {axis!r}")
        return reduce_sinfo(call, INT64)

    def legalize(call: Call, args: list[Any]) -> Any:
        return fn(args[0], call.attrs.get("axis"), call.attrs["keepdims"])

    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = doc
    register_op(full, infer=infer, legalize=legalize, pattern=Pattern.COMM_REDUCE)(builder)
    return builder


argmax = make_arg_reduce("argmax", topi.argmax, "Index of the largest element along ``axis``.")
argmin = make_arg_reduce("argmin", topi.argmin, "Index of the smallest element along ``axis``.")
