"""Shape operators: ``Shape Size Reshape Expand ConstantOfShape Range EyeLike``.

Shapes are import-time values (numeric or symbolic arrays, see `values`) wherever they are
computed from constants and dims. A shape computed from data (a Reshape to an input tensor's
values) becomes fresh symbolic dims read when the model runs (`Ctx.run_time_ints`): ONNX's
``0`` / ``-1`` of Reshape, the broadcasting of Expand and the length of Range are computed on
the operand first, so the dims read are never negative, and what ONNX refuses (a Reshape that
changes the element count, an Expand to an incompatible dim) is a run-time check.
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
    """A shape operand as ints and `tir` expressions: known at import time, or symbolic ints
    bound when the model runs (`Ctx.run_time_ints`) for a value computed from data."""
    if isinstance(v, Expr):
        return ctx.run_time_ints(v, what)
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
    allowzero = bool(node.attrs.get("allowzero", 0))
    if isinstance(ins[1], Expr):
        return _reshape_run_time(ctx, x, ins[1], allowzero)
    target = shape_input(ctx, ins[1], "Reshape's shape")
    new = reshape_dims(dim_values(x), target, allowzero)
    return ctx.emit(R.reshape(x, ShapeExpr([as_dim(d) for d in new])))


def _i64(v: int) -> Expr:
    return const(np.array(v, "int64"))


def _reshape_run_time(ctx: Ctx, x: Expr, target: Expr, allowzero: bool) -> Any:
    """Reshape to a target computed from data: ONNX's ``0`` (the input's dim) and ``-1`` (what
    is left) resolved by a computation on the target tensor, its values read as fresh dims, and
    the element count checked when the model runs (a ``match_cast`` of the flattened input)."""
    if dtype(target) != "int64":
        target = ctx.emit(R.astype(target, "int64"))
    n = dim_values(target)[0] if len(dims(target)) == 1 else None
    x_dims = dim_values(x)
    total: Any = 1
    for d in x_dims:
        total = total * d
    t = target
    if not allowzero and isinstance(n, int):
        own = V.sym_array([x_dims[k] if k < len(x_dims) else 0 for k in range(n)])
        t = ctx.emit(R.where(ctx.emit(R.equal(t, _i64(0))), ctx.expr(own), t))
    hole = ctx.emit(R.equal(t, _i64(-1)))
    known = ctx.emit(R.prod(ctx.emit(R.where(hole, _i64(1), t))))
    count = ctx.emit(R.reshape(ctx.expr(V.sym_array([total])), ShapeExpr([])))
    fill = ctx.emit(R.floor_divide(count, ctx.emit(R.maximum(known, _i64(1)))))
    t = ctx.emit(R.where(hole, fill, t))
    new = ctx.run_time_ints(t, "Reshape's shape")
    size: Any = IntImm("int64", 1)
    for d in new:
        size = size * d
    flat = ctx.emit(R.reshape(x, ShapeExpr([as_dim(total)])), f"{ctx.out_name()}_elements")
    flat = ctx.cast_dims(flat, [size])
    return ctx.emit(R.reshape(flat, ShapeExpr(new)))


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
    if isinstance(ins[1], Expr):
        return _expand_run_time(ctx, x, ins[1])
    shape = [as_dim(d) for d in shape_input(ctx, ins[1], "Expand's shape")]
    x_dims, shape = agreed_dims([list(dims(x)), shape])
    x = ctx.cast_dims(x, x_dims)
    out = broadcast_shape(dim_values(x), [d.value if isinstance(d, IntImm) else d for d in shape])
    return ctx.emit(R.broadcast_to(x, ShapeExpr([as_dim(d) for d in out])))


def _expand_run_time(ctx: Ctx, x: Expr, target: Expr) -> Any:
    """Expand to a shape computed from data: a dim of ``x`` other than 1 stays (the run-time
    value must be it or 1, checked), a dim of 1 takes the run-time value."""
    if dtype(target) != "int64":
        target = ctx.emit(R.astype(target, "int64"))
    n = dim_values(target)[0] if len(dims(target)) == 1 else None
    x_dims = dim_values(x)
    if isinstance(n, int) and n < len(x_dims):
        ones = const(np.ones(len(x_dims) - n, "int64"))
        target = ctx.emit(R.concat([ones, target], 0))
        n = len(x_dims)
    if not isinstance(n, int):
        return ctx.run_time_ints(target, "Expand's shape")  # raises, naming the value
    aligned = [1] * (n - len(x_dims)) + x_dims
    one = ctx.emit(R.equal(target, _i64(1)))
    t = ctx.emit(R.where(one, ctx.expr(V.sym_array(aligned)), target))
    keep = [None if not isinstance(d, PrimExpr) and d == 1 else as_dim(d) for d in aligned]
    new = ctx.run_time_ints(t, "Expand's shape", keep)
    return ctx.emit(R.broadcast_to(x, ShapeExpr(new)))


@converter("ConstantOfShape")
def _constant_of_shape(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    shape = shape_input(ctx, ins[0], "ConstantOfShape's shape")
    value = node.attrs.get("value")
    value = np.zeros((), "float32") if value is None else np.asarray(value).reshape(())
    return ctx.emit(R.full(ShapeExpr([as_dim(d) for d in shape]), const(value)))


@converter("Range")
def _range(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    if any(isinstance(v, Expr) for v in ins):
        return _range_run_time(ctx, ins)
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


def _range_run_time(ctx: Ctx, ins: list[Any]) -> Any:
    """Range with a bound computed from data: its length ``max(ceil((limit - start) / delta),
    0)`` computed when the model runs and read as a dim, the values ``start + i * delta``."""
    dt = next(dtype(v) for v in ins if isinstance(v, Expr))
    start, limit, delta = (ctx.emit(R.reshape(ctx.expr(v, dt), ShapeExpr([]))) for v in ins)
    span = ctx.emit(R.subtract(limit, start))
    if dt.startswith("float"):
        steps = ctx.emit(R.ceil(ctx.emit(R.divide(span, delta))))
        length = ctx.emit(R.astype(steps, "int64"))
    else:
        span, delta64 = (ctx.emit(R.astype(v, "int64")) for v in (span, delta))
        sign = ctx.emit(R.where(ctx.emit(R.greater(delta64, _i64(0))), _i64(1), _i64(-1)))
        ahead = ctx.emit(R.subtract(ctx.emit(R.add(span, delta64)), sign))
        length = ctx.emit(R.floor_divide(ahead, delta64))
    length = ctx.emit(R.maximum(length, _i64(0)))
    (n,) = ctx.run_time_ints(length, "Range's length")
    steps_taken = ctx.emit(R.arange(PrimValue(IntImm("int64", 0)), PrimValue(n), 1, "int64"))
    if dt != "int64":
        steps_taken = ctx.emit(R.astype(steps_taken, dt))
    return ctx.emit(R.add(ctx.emit(R.multiply(steps_taken, delta)), start))


@converter("EyeLike")
def _eye_like(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    shape = dim_values(ins[0])
    if any(isinstance(d, PrimExpr) for d in shape):
        raise FrontendError("EyeLike of a tensor with symbolic dims is not supported")
    to = node.attrs.get("dtype")
    dt = V.onnx_dtype(to, "EyeLike") if to is not None else dtype(ins[0])
    return np.eye(shape[0], shape[1], node.attrs.get("k", 0), dtype=np.dtype(dt))
