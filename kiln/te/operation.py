"""Building tensor expressions: `placeholder`, `compute`, `var`/`size_var`, `if_then_else`.

``compute(shape, lambda i, j: ...)`` names its axes after the lambda's parameters (``i0, i1, ...``
for ``*indices``). Every mistake is reported as an `IRError` naming the operator and tensor:
a lambda taking the wrong number of indices, indexing a tensor with the wrong rank, a float where
an integer is needed, a reduction that is not the whole body, an axis of another compute.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from kiln.errors import IRError, IRValueError
from kiln.ir.dtype import DataType
from kiln.ir.visitor import pre_order_nodes
from kiln.te.reduce import Reduce
from kiln.te.tensor import AxisVar, ComputeOp, PlaceholderOp, Tensor
from kiln.tir import op as tir_op
from kiln.tir.expr import PrimExpr, SizeVar, Var, convert
from kiln.tir.stmt import Range

INT32 = DataType("int", 32)
INT64 = DataType("int", 64)


def var(name: str = "v", dtype: str | DataType = "int32") -> Var:
    """A scalar variable (a symbolic parameter)."""
    return Var(name, DataType.parse(dtype))


def size_var(name: str = "n", dtype: str | DataType = "int32") -> SizeVar:
    """A non-negative symbolic dimension."""
    return SizeVar(name, DataType.parse(dtype))


def _shape(shape: Any, what: str) -> tuple[PrimExpr, ...]:
    dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    out = []
    for d in dims:
        if isinstance(d, bool) or isinstance(d, float) or not isinstance(d, (int, PrimExpr)):
            raise IRError(f"{what}: shape dimension {d!r} must be an integer or integer Var")
        e = convert(d)
        if not e.dtype.is_integer or e.dtype.lanes != 1:
            raise IRError(f"{what}: shape dimension {d!r} has dtype {e.dtype}, expected an integer")
        if isinstance(d, int) and d < 0:
            raise IRError(f"{what}: shape dimension {d} is negative")
        out.append(e)
    index_dt = INT64 if any(e.dtype == INT64 for e in out) else INT32
    return tuple(convert(d, index_dt) if isinstance(d, int) else e for d, e in zip(dims, out))


def _element_dtype(dtype: Any, what: str) -> DataType:
    try:
        dt = DataType.parse(dtype)
    except IRError as e:
        raise IRError(f"{what}: {e}") from None
    if dt.lanes != 1 or dt.is_handle or dt.is_void:
        raise IRError(
            f"{what}: unsupported element dtype {dt}; tensors hold scalars "
            "(int, uint, float, bfloat16, float8 or bool)"
        )
    return dt


def placeholder(shape: Any, dtype: str | DataType = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor of ``shape`` (ints and integer Vars) and ``dtype``."""
    what = f"placeholder {name!r}"
    return PlaceholderOp(name, _shape(shape, what), _element_dtype(dtype, what)).output(0)


def compute(
    shape: Any,
    fcompute: Callable[..., Any],
    name: str = "compute",
    tag: str = "",
    attrs: dict[str, Any] | None = None,
) -> Tensor:
    """A tensor of ``shape`` whose element at ``(i, j, ...)`` is ``fcompute(i, j, ...)``."""
    what = f"compute {name!r}"
    dims = _shape(shape, what)
    names = _axis_names(fcompute, len(dims), what)
    axes = tuple(
        AxisVar(n, d.dtype, dom=Range(convert(0, d.dtype), d)) for n, d in zip(names, dims)
    )
    try:
        body = fcompute(*axes)
    except (IRError, IRValueError) as e:
        raise type(e)(f"{what}: {e}") from None
    body = _check_body(body, axes, what)
    reduce_axes = body.axis if isinstance(body, Reduce) else ()
    return ComputeOp(name, tag, attrs, axes, reduce_axes, body).output(0)


def _axis_names(fcompute: Callable[..., Any], ndim: int, what: str) -> list[str]:
    default = [f"i{k}" for k in range(ndim)]
    if ndim == 1:
        default = ["i"]
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        return default
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return default
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    if not (len(required) <= ndim <= len(positional)):
        raise IRValueError(
            f"{what}: the lambda takes {len(positional)} index argument(s) but the shape has "
            f"{ndim} dimension(s)"
        )
    return [p.name for p in positional[:ndim]]


def _check_body(body: Any, axes: tuple[AxisVar, ...], what: str) -> PrimExpr:
    if isinstance(body, (tuple, list)):
        raise IRValueError(
            f"{what}: returning several values is not supported; use one compute each"
        )
    if isinstance(body, float) or body is None or isinstance(body, str):
        raise IRValueError(
            f"{what}: the lambda returned {body!r}; return a TIR expression "
            "(write tir.const(value, 'float32') for a constant)"
        )
    if isinstance(body, Tensor):
        raise IRValueError(f"{what}: the lambda returned tensor {body.name!r}; index it (T[i, j])")
    try:
        body = convert(body)
    except IRError as e:
        raise IRError(f"{what}: {e}") from None
    if body.dtype.lanes != 1 or body.dtype.is_handle or body.dtype.is_void:
        raise IRError(f"{what}: unsupported element dtype {body.dtype}; the body must be a scalar")
    nodes = pre_order_nodes(body)
    if any(isinstance(n, Reduce) for n in nodes[1:]):
        raise IRValueError(
            f"{what}: a reduction must be the whole body of a compute (not part of an "
            "expression); compute the reduction first, then use it in a second compute"
        )
    _check_axes(body, nodes, axes, what)
    return body


def _check_axes(body: PrimExpr, nodes: list[Any], axes: tuple[AxisVar, ...], what: str) -> None:
    own = {id(a) for a in axes}
    if isinstance(body, Reduce):
        own |= {id(a) for a in body.axis}
    for n in nodes:
        if isinstance(n, AxisVar) and id(n) not in own:
            if n.is_reduce:
                raise IRValueError(
                    f"{what}: reduction axis {n.name!r} is used outside the reduction that "
                    "iterates it; list it in axis= of te.sum/max/min"
                )
            raise IRValueError(f"{what}: axis {n.name!r} belongs to another compute")


def if_then_else(cond: Any, then_value: Any, else_value: Any) -> PrimExpr:
    """``cond ? then_value : else_value`` evaluating only the chosen side."""
    c = convert(cond)
    if not c.dtype.is_bool:
        raise IRError(f"if_then_else: the condition must be boolean, got dtype {c.dtype}")
    return tir_op.if_then_else(c, then_value, else_value)
