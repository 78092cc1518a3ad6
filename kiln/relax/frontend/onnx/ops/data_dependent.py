"""Operators whose result shape depends on data values: ``NonZero``, ``Unique``, and ``TopK`` (whose
``k`` may be a value computed from data).

The count of the result (how many elements are not zero) is computed first and read as a fresh
symbolic dim when the model runs (`Ctx.run_time_ints`); a kernel then writes the indices into an
output of that size (``nonzero_kernel``, one serial pass in row-major order, as numpy and
onnxruntime list them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kiln.errors import FrontendError
from kiln.relax import op as R
from kiln.relax.expr import Expr, ShapeExpr, const
from kiln.relax.frontend.onnx.ops import Ctx, Node, converter, dim_values, dtype
from kiln.relax.op.builtin import call_tir
from kiln.relax.struct_info import TensorStructInfo
from kiln.tir import stmt as S
from kiln.tir.buffer import decl_buffer
from kiln.tir.expr import IntImm, PrimExpr
from kiln.tir.expr import Var as TirVar
from kiln.tir.expr import const as tir_const
from kiln.tir.function import PrimFunc
from kiln.topi.sort import topk_kernel, unique_count_kernel, unique_kernel

INT64 = "int64"


def nonzero_kernel(x_dims: list[Any], x_dtype: str) -> PrimFunc:
    """``nonzero(x, out)``: ``out[:, k]`` holds the coordinates of the k-th element of ``x``
    (row-major order) that is not zero; ``out`` has exactly as many columns as there are."""
    rank = len(x_dims)
    shape = [
        IntImm(INT64, d) if not isinstance(d, PrimExpr) else TirVar(f"n{k}", INT64)
        for k, d in enumerate(x_dims)
    ]
    x_h, out_h = TirVar("x", "handle"), TirVar("out", "handle")
    xb = decl_buffer(shape, x_dtype, "x")
    ob = decl_buffer((IntImm(INT64, rank), TirVar("count", INT64)), INT64, "out")
    at = decl_buffer((IntImm(INT64, 1),), INT64, "at", scope="local")
    i = TirVar("i", INT64)
    coords, rest = [], i
    for d in reversed(shape):
        coords.insert(0, rest % d)
        rest = rest // d
    zero = IntImm(INT64, 0)
    here = at[zero]
    stores = [S.BufferStore(ob, c, (IntImm(INT64, k), here)) for k, c in enumerate(coords)]
    step = S.seq(*stores, S.BufferStore(at, here + 1, (zero,)))
    test = xb[tuple(coords)].ne(tir_const(False if x_dtype == "bool" else 0, x_dtype))
    total: PrimExpr = IntImm(INT64, 1)
    for d in shape:
        total = total * d
    loop = S.For(i, zero, total, S.ForKind.SERIAL, S.IfThenElse(test, step, None))
    body = S.seq(S.BufferStore(at, zero, (zero,)), loop)
    alloc = S.Allocate(at.data, INT64, (IntImm(INT64, 1),), True, S.DeclBuffer(at, body))
    return PrimFunc((x_h, out_h), alloc, buffer_map={x_h: xb, out_h: ob})


@converter("NonZero")
def _nonzero(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    x_dims = dim_values(x)
    if not x_dims:
        raise FrontendError("NonZero of a scalar is not supported (give it one dim)")
    dt = dtype(x)
    mask = x
    if dt != "bool":
        mask = ctx.emit(R.not_equal(x, const(np.zeros((), dtype=np.dtype(dt)))))
    count = ctx.emit(R.sum(ctx.emit(R.astype(mask, INT64))))
    (n,) = ctx.run_time_ints(ctx.emit(R.reshape(count, ShapeExpr([1]))), "NonZero's count")
    gv = ctx.imp.bb.add_func(nonzero_kernel(x_dims, dt), "nonzero")
    out = TensorStructInfo([IntImm(INT64, len(x_dims)), n], INT64)
    return ctx.emit(call_tir(gv, [x], out))


@converter("TopK")
def _topk(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    """The ``k`` greatest (``largest=1``) or least elements along ``axis`` and their int64
    indices (`kiln.topi.sort.topk_kernel`), always in order (``sorted=0`` lets any order be
    returned; kiln's is the sorted one). ``k`` may be computed from data: the result then has
    a dim read when the model runs, checked against the axis."""
    x = ctx.tensor(ins, 0)
    x_dims = dim_values(x)
    if any(isinstance(d, PrimExpr) for d in x_dims):
        raise FrontendError("TopK of a tensor with symbolic dims is not supported yet")
    axis = node.attrs.get("axis", -1) % len(x_dims)
    largest = bool(node.attrs.get("largest", 1))
    n = x_dims[axis]
    if isinstance(ins[1], Expr):
        k: Any = ctx.run_time_ints(ctx.expr(ins[1]), "TopK's k")[0]
    else:
        k = ctx.ints(ins[1], "TopK's k")[0]
        if not 0 <= k <= n:
            raise FrontendError(f"TopK's k is {k}; it must lie in 0..{n} (axis {axis}'s extent)")
    gv = ctx.imp.bb.add_func(topk_kernel(list(x_dims), axis, k, largest, dtype(x)), "topk")
    out_dims: list[Any] = [IntImm(INT64, d) for d in x_dims]
    out_dims[axis] = k if isinstance(k, PrimExpr) else IntImm(INT64, k)
    outs = [TensorStructInfo(out_dims, dtype(x)), TensorStructInfo(out_dims, INT64)]
    tir_vars = [k] if isinstance(k, PrimExpr) else None
    pair = ctx.emit(call_tir(gv, [x], outs, tir_vars))
    return [ctx.emit(pair[0]), ctx.emit(pair[1])]


@converter("Unique")
def _unique(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    """The distinct values of the whole tensor (no ``axis``), ascending (``sorted=1``) or in
    the order they first occur, with their first indices, each element's inverse index and
    the counts (`kiln.topi.sort.unique_kernel`); their number is counted first and read as a
    dim when the model runs (`Ctx.run_time_ints`). NaNs are one value, as numpy groups them."""
    if node.attrs.get("axis") is not None:
        raise FrontendError("Unique along an axis is not supported yet (only over all elements)")
    x = ctx.tensor(ins, 0)
    x_dims = dim_values(x)
    if any(isinstance(d, PrimExpr) for d in x_dims):
        raise FrontendError("Unique of a tensor with symbolic dims is not supported yet")
    n, dt = int(np.prod(x_dims, dtype=np.int64)), dtype(x)
    flat = x if len(x_dims) == 1 else ctx.emit(R.reshape(x, ShapeExpr([n])))
    count_gv = ctx.imp.bb.add_func(unique_count_kernel(n, dt), "unique_count")
    count = ctx.emit(call_tir(count_gv, [flat], TensorStructInfo([IntImm(INT64, 1)], INT64)))
    (u,) = ctx.run_time_ints(count, "Unique's count")
    kernel = unique_kernel(n, TirVar("u", INT64), dt, in_order=not node.attrs.get("sorted", 1))
    gv = ctx.imp.bb.add_func(kernel, "unique")
    per_value = [TensorStructInfo([u], dt), TensorStructInfo([u], INT64)]
    outs = [*per_value, TensorStructInfo([IntImm(INT64, n)], INT64), TensorStructInfo([u], INT64)]
    four = ctx.emit(call_tir(gv, [flat], outs, [u]))
    return [ctx.emit(four[k]) for k in range(len(node.outputs))]
