"""Reductions and normalizing along an axis: ``Reduce*``, ``ArgMax ArgMin``, ``Softmax
LogSoftmax Hardmax``.

``Reduce*`` read their axes from the attribute (older opsets) or the second input; an empty
axes list reduces everything unless ``noop_with_empty_axes`` says to pass the input through.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kiln.errors import FrontendError
from kiln.relax import op as R
from kiln.relax.expr import Expr, ShapeExpr, const
from kiln.relax.frontend.onnx.ops import Ctx, Node, converter, dim_values, dtype, ndim
from kiln.relax.frontend.onnx.ops.elementwise import scalar
from kiln.relax.frontend.onnx.ops.shape import as_dim
from kiln.relax.frontend.onnx.ops.tensor import axes_of
from kiln.tir.expr import PrimExpr

SIMPLE = {
    "ReduceSum": R.sum,
    "ReduceMean": R.mean,
    "ReduceMax": R.max,
    "ReduceMin": R.min,
    "ReduceProd": R.prod,
}


def _axes(ctx: Ctx, node: Node, ins: list[Any], x: Expr) -> list[int] | None:
    """The reduced axes (None: pass through)."""
    axes = axes_of(ctx, node, ins, 1)
    if not axes:
        return None if node.attrs.get("noop_with_empty_axes", 0) else list(range(ndim(x)))
    return sorted(a % ndim(x) for a in axes)


@converter(*SIMPLE, "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp")
def _reduce(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    axes = _axes(ctx, node, ins, x)
    keep = bool(node.attrs.get("keepdims", 1))
    op = node.op_type
    if axes is None:
        return x
    if op in EMPTY_IDENTITY and any(dim_values(x)[a] == 0 for a in axes):
        return _empty_extreme(ctx, x, axes, keep, op)
    if op in SIMPLE:
        if dtype(x) == "bool" and op in ("ReduceMax", "ReduceMin"):
            small = ctx.emit(SIMPLE[op](R.astype(x, "int8"), axes, keep))
            return ctx.emit(R.astype(small, "bool"))
        return ctx.emit(SIMPLE[op](x, axes, keep))
    if op == "ReduceL1":
        return ctx.emit(R.sum(R.abs(x), axes, keep))
    if op == "ReduceSumSquare":
        return ctx.emit(R.sum(R.multiply(x, x), axes, keep))
    if op == "ReduceL2":
        s = ctx.emit(R.sum(R.multiply(x, x), axes, keep))
        return ctx.emit(_float_op(s, R.sqrt))
    if op == "ReduceLogSum":
        return ctx.emit(R.log(R.sum(x, axes, keep)))
    m = ctx.emit(R.max(x, axes, True))
    s = ctx.emit(R.sum(R.exp(R.subtract(x, m)), axes, keep))
    m2 = m if keep else ctx.emit(R.squeeze(m, axes))
    return ctx.emit(R.add(R.log(s), m2))


EMPTY_IDENTITY = {"ReduceMax": -1, "ReduceMin": 1, "ReduceLogSumExp": -1}
"""Reductions without elements to reduce over: the identity (sign: -inf / +inf, or the dtype's
lowest / highest value)."""


def _empty_extreme(ctx: Ctx, x: Expr, axes: list[int], keep: bool, op: str) -> Expr:
    """``op`` over an axis of extent 0: ONNX defines it as the reduction's identity (the
    operators refuse to reduce no elements, as numpy does)."""
    dt = dtype(x)
    sign = EMPTY_IDENTITY[op]
    if dt == "bool":
        value: Any = sign > 0
    elif dt.startswith("float"):
        value = sign * np.inf
    else:
        info = np.iinfo(dt)
        value = info.max if sign > 0 else info.min
    dims = [1 if a in axes else d for a, d in enumerate(dim_values(x)) if keep or a not in axes]
    return ctx.emit(R.full(ShapeExpr([as_dim(d) for d in dims]), const(np.array(value, dt))))


def _float_op(x: Expr, fn: Any) -> Expr:
    dt = dtype(x)
    if dt.startswith("float"):
        return fn(x)
    return R.astype(fn(R.astype(x, "float64")), dt)


@converter("ArgMax", "ArgMin")
def _arg(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    axis = node.attrs.get("axis", 0) % ndim(x)
    keep = bool(node.attrs.get("keepdims", 1))
    fn = R.argmax if node.op_type == "ArgMax" else R.argmin
    if not node.attrs.get("select_last_index", 0):
        return ctx.emit(fn(x, axis, keep))
    n = dim_values(x)[axis]
    if isinstance(n, PrimExpr):
        return ctx.emit(fn(x, axis, keep))
    flipped = ctx.emit(R.strided_slice(x, [axis], [n - 1], [-(2**62)], [-1]))
    idx = ctx.emit(fn(flipped, axis, keep))
    return ctx.emit(R.subtract(const(np.array(n - 1, "int64")), idx))


@converter("Softmax", "LogSoftmax")
def _softmax(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    fn = R.nn.softmax if node.op_type == "Softmax" else R.nn.log_softmax
    if ctx.opset >= 13:
        return ctx.emit(fn(x, node.attrs.get("axis", -1)))
    return _coerced_2d(ctx, x, node.attrs.get("axis", 1), fn)


def _coerced_2d(ctx: Ctx, x: Expr, axis: int, fn: Any) -> Expr:
    """Before opset 13, Softmax-like ops work on ``x`` flattened to 2-D at ``axis``."""
    d = dim_values(x)
    axis = axis + len(d) if axis < 0 else axis
    rows: Any = 1
    cols: Any = 1
    for e in d[:axis]:
        rows = rows * e
    for e in d[axis:]:
        cols = cols * e
    flat = ctx.emit(R.reshape(x, ShapeExpr([as_dim(rows), as_dim(cols)])))
    out = ctx.emit(fn(flat, 1))
    return ctx.emit(R.reshape(out, ShapeExpr([as_dim(e) for e in d])))


@converter("Hardmax")
def _hardmax(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    axis = node.attrs.get("axis", -1) % ndim(x)
    n = dim_values(x)[axis]
    idx = ctx.emit(R.argmax(x, axis, True))
    shape = [1] * ndim(x)
    shape[axis] = n
    rng = ctx.emit(R.reshape(R.arange(0, n, 1, "int64"), shape))
    hit = ctx.emit(R.equal(rng, idx))
    return ctx.emit(R.where(hit, scalar(1, x), scalar(0, x)))


@converter("CumSum", "CumProd")
def _cumulative(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    axis = ctx.ints(ins[1], f"{node.op_type}'s axis")[0]
    fn = R.cumsum if node.op_type == "CumSum" else R.cumprod
    exclusive, reverse = bool(node.attrs.get("exclusive", 0)), bool(node.attrs.get("reverse", 0))
    return ctx.emit(fn(x, axis, exclusive, reverse))


def _einsum_terms(equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """The operands' and the output's index letters (``...`` spelled out as upper-case)."""
    lhs, _, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    wide = max((r - len(t.replace("...", "")) for t, r in zip(terms, ranks)), default=0)
    fill = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:wide]
    out_terms = []
    for t, r in zip(terms, ranks):
        n = r - len(t.replace("...", ""))
        out_terms.append(t.replace("...", fill[wide - n :]))
    if not _:
        seen = "".join(out_terms)
        rhs = fill + "".join(sorted(c for c in set(seen) if seen.count(c) == 1 and c.islower()))
    return out_terms, rhs.replace("...", fill)


@converter("Einsum")
def _einsum(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    xs = [ctx.expr(v) for v in ins]
    terms, out = _einsum_terms(node.attrs["equation"], [ndim(x) for x in xs])
    if any(len(set(t)) != len(t) for t in terms):
        raise FrontendError("Einsum with a repeated index in one operand (a diagonal)")
    letters = sorted(set("".join(terms)), key=lambda c: (c not in out, out.find(c), c))
    total = None
    for x, t in zip(xs, terms):
        perm = sorted(range(len(t)), key=lambda k: letters.index(t[k]))
        y = ctx.emit(R.permute_dims(x, perm)) if perm != list(range(len(t))) else x
        missing = [k for k, c in enumerate(letters) if c not in t]
        y = ctx.emit(R.expand_dims(y, missing)) if missing else y
        total = y if total is None else ctx.emit(R.multiply(total, y))
    summed = [k for k, c in enumerate(letters) if c not in out]
    res = ctx.emit(R.sum(total, summed, False)) if summed else total
    order = [c for c in letters if c in out]
    perm = [order.index(c) for c in out]
    return ctx.emit(R.permute_dims(res, perm)) if perm != list(range(len(perm))) else res
