"""Shape operators: ``Shape Size Reshape Expand ConstantOfShape Range EyeLike``.

Shapes are import-time values (numeric or symbolic arrays, see `values`); a shape computed at
run time from data (not from dims) is not supported, since relax shapes are known up to
symbolic dims.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kiln.errors import FrontendError
from kiln.relax import op as R
from kiln.relax.expr import Expr, PrimValue, ShapeExpr, const
from kiln.relax.frontend.common import agreed_dims
from kiln.relax.frontend.onnx import values as V
from kiln.relax.frontend.onnx.ops import (
    Ctx,
    Node,
    converter,
    dim_values,
    dims,
    dtype,
    shape_of_value,
)
from kiln.tir.expr import IntImm, PrimExpr


def shape_input(ctx: Ctx, v: Any, what: str) -> list[Any]:
    """A shape operand as ints and `tir` expressions (known at import time)."""
    if isinstance(v, Expr):
        ctx.needs_constant(v, what)
        raise FrontendError(
            f"{what} is computed from data at run time; kiln needs shapes "
            "known when compiling (up to symbolic dims)"
        )
    return [int(e) if not isinstance(e, PrimExpr) else e for e in np.asarray(v).reshape(-1)]


def as_dim(e: Any) -> Any:
    return IntImm("int64", int(e)) if not isinstance(e, PrimExpr) else e


@converter("Shape")
def _shape(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    arr = shape_of_value(ins[0])
    start, end = node.attrs.get("start", 0), node.attrs.get("end")
    return V.tidy(arr[start:end])


@converter("Size")
def _size(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    total: Any = 1
    for d in dim_values(ins[0]):
        total = total * d
    return V.tidy(np.array([total, None], dtype=object)[:1]).reshape(())


def reshape_dims(x_dims: list[Any], target: list[Any], allowzero: bool) -> list[Any]:
    """ONNX's target shape with 0 (copy the input's dim) and -1 resolved where possible."""
    out = []
    for k, d in enumerate(target):
        if not isinstance(d, PrimExpr) and d == 0 and not allowzero:
            out.append(x_dims[k])
        else:
            out.append(d)
    holes = [k for k, d in enumerate(out) if not isinstance(d, PrimExpr) and d == -1]
    if len(holes) == 1:
        rest = [d for k, d in enumerate(out) if k != holes[0]]
        filled = _quotient(list(x_dims), rest)
        if filled is not None:
            out[holes[0]] = filled
    return out


def _quotient(num: list[Any], den: list[Any]) -> Any:
    """``prod(num) // prod(den)`` cancelling the symbolic factors both share (None if it does
    not come out as a product of the remaining factors)."""
    num_sym = [d for d in num if isinstance(d, PrimExpr)]
    den_sym = [d for d in den if isinstance(d, PrimExpr)]
    for d in list(den_sym):
        match = next((n for n in num_sym if n is d), None)
        if match is None:
            return None
        num_sym.remove(match)
        den_sym.remove(d)
    n_int = int(np.prod([d for d in num if not isinstance(d, PrimExpr)], dtype=np.int64))
    d_int = int(np.prod([d for d in den if not isinstance(d, PrimExpr)], dtype=np.int64))
    if d_int == 0 or n_int % d_int:
        return None
    out: Any = n_int // d_int
    for d in num_sym:
        out = d * out
    return out


@converter("Reshape")
def _reshape(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    target = shape_input(ctx, ins[1], "Reshape's shape")
    new = reshape_dims(dim_values(x), target, bool(node.attrs.get("allowzero", 0)))
    return ctx.emit(R.reshape(x, ShapeExpr([as_dim(d) for d in new])))


def broadcast_shape(a: list[Any], b: list[Any]) -> list[Any]:
    """numpy broadcasting of two shapes of ints and `tir` expressions."""
    n = max(len(a), len(b))
    a = [1] * (n - len(a)) + list(a)
    b = [1] * (n - len(b)) + list(b)
    out = []
    for p, q in zip(a, b):
        if not isinstance(p, PrimExpr) and p == 1:
            out.append(q)
        elif not isinstance(q, PrimExpr) and q == 1:
            out.append(p)
        else:
            out.append(p if isinstance(q, PrimExpr) or not isinstance(p, PrimExpr) else q)
    return out


@converter("Expand")
def _expand(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    shape = [as_dim(d) for d in shape_input(ctx, ins[1], "Expand's shape")]
    x_dims, shape = agreed_dims([list(dims(x)), shape])
    x = ctx.cast_dims(x, x_dims)
    out = broadcast_shape(dim_values(x), [d.value if isinstance(d, IntImm) else d for d in shape])
    return ctx.emit(R.broadcast_to(x, ShapeExpr([as_dim(d) for d in out])))


@converter("ConstantOfShape")
def _constant_of_shape(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    shape = shape_input(ctx, ins[0], "ConstantOfShape's shape")
    value = node.attrs.get("value")
    value = np.zeros((), "float32") if value is None else np.asarray(value).reshape(())
    return ctx.emit(R.full(ShapeExpr([as_dim(d) for d in shape]), const(value)))


@converter("Range")
def _range(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    bounds = []
    for v, what in zip(ins, ("start", "limit", "delta")):
        if V.is_const(v):
            bounds.append(v.reshape(-1)[0].item())
            continue
        items = shape_input(ctx, v, f"Range's {what}")
        bounds.append(items[0])
    dt = dtype(ins[0]) if V.is_const(ins[0]) else "int64"
    if not any(isinstance(b, PrimExpr) for b in bounds):  # bounds bound at compile time
        nums = [float(b) if dt.startswith("float") else int(b) for b in bounds]
        return ctx.emit(R.arange(nums[0], nums[1], nums[2], dt))
    if not dt.startswith("int"):
        raise FrontendError("a Range with symbolic float bounds is not supported")
    start, limit, delta = (PrimValue(as_dim(b)) for b in bounds)
    return ctx.emit(R.arange(start, limit, delta, dt))


@converter("EyeLike")
def _eye_like(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    shape = dim_values(ins[0])
    if any(isinstance(d, PrimExpr) for d in shape):
        raise FrontendError("EyeLike of a tensor with symbolic dims is not supported")
    to = node.attrs.get("dtype")
    dt = V.onnx_dtype(to, "EyeLike") if to is not None else dtype(ins[0])
    return np.eye(shape[0], shape[1], node.attrs.get("k", 0), dtype=np.dtype(dt))
