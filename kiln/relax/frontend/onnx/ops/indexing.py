"""``GatherND``: gathers slices of the data by index tuples, written as one ``take`` of the data
seen as a matrix of those slices.

The ``k`` leading indexed dims (after ``batch_dims``) are flattened into one axis; each index
tuple (negative entries wrapped once, as ONNX says) becomes the row it names, and a batch's rows
are offset by the batch's position. Symbolic dims stay symbolic: the strides are computed from
the dims at run time where they are not constants.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kiln.errors import FrontendError
from kiln.relax import op as R
from kiln.relax.expr import Expr, PrimValue, ShapeExpr
from kiln.relax.frontend.onnx import values as V
from kiln.relax.frontend.onnx.ops import Ctx, Node, converter, dim_values, dtype
from kiln.relax.frontend.onnx.ops.shape import as_dim
from kiln.tir.expr import PrimExpr


def _product(dims: list[Any]) -> Any:
    out: Any = 1
    for d in dims:
        out = out * d
    return out


def _row_of(ctx: Ctx, idx: Expr, dims: list[Any]) -> Expr:
    """The row of each index tuple (the last axis of ``idx``) in ``dims`` flattened."""
    extents = ctx.expr(V.sym_array(dims))
    zero = ctx.expr(np.zeros((), np.int64))
    wrapped = ctx.emit(R.where(R.less(idx, zero), R.add(idx, extents), idx))
    strides = ctx.expr(V.sym_array([_product(dims[j + 1 :]) for j in range(len(dims))]))
    return ctx.emit(R.sum(R.multiply(wrapped, strides), axis=[-1]))


@converter("GatherND")
def _gather_nd(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x, idx = ctx.tensor(ins, 0), ctx.tensor(ins, 1)
    b = int(node.attrs.get("batch_dims", 0))
    xd, id_dims = dim_values(x), dim_values(idx)
    k = id_dims[-1]
    if isinstance(k, PrimExpr):
        raise FrontendError("the last dim of GatherND's indices must be known when compiling")
    if b + k > len(xd) or b >= len(id_dims):
        raise FrontendError(
            f"GatherND: {k} indexed dims after {b} batch dims do not fit data of rank {len(xd)}"
        )
    if dtype(idx) != "int64":
        idx = ctx.emit(R.astype(idx, "int64"))
    rows = _row_of(ctx, idx, xd[b : b + k])
    if b:
        batch = _product(xd[:b])
        start, stop = PrimValue(as_dim(0)), PrimValue(as_dim(batch))
        first = ctx.emit(R.arange(start, stop, 1, "int64"))
        tail = [1] * (len(id_dims) - 1 - b)
        first = ctx.emit(R.reshape(first, ShapeExpr([as_dim(d) for d in [*xd[:b], *tail]])))
        size = ctx.expr(V.sym_array([_product(xd[b : b + k])]))
        rows = ctx.emit(R.add(R.multiply(first, size), rows))
    flat = [_product(xd[: b + k]), *xd[b + k :]]
    data = ctx.emit(R.reshape(x, ShapeExpr([as_dim(d) for d in flat])))
    return ctx.emit(R.take(data, rows, 0))
