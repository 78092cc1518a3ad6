"""Matrix products: ``relax.matmul`` (numpy ``matmul`` semantics) and the ``linear`` helper.

``matmul(x1, x2)``: a 1-D operand is a row (left) or column (right) vector whose axis is dropped
from the result; leading (batch) axes broadcast. Operands share a dtype unless ``out_dtype`` is
given (the product is then computed in ``out_dtype``). Pattern: ``OUT_ELEMWISE_FUSABLE``.
``linear(x, w, b)`` is ``matmul(x, permute_dims(w)) + b`` (PyTorch's ``nn.Linear``), built from
the records rather than being one.
"""

from __future__ import annotations

from typing import Any

from kiln import te, topi
from kiln.ir.op import Op
from kiln.relax.analysis.struct_info import Fit, dims_fit
from kiln.relax.expr import Call, Expr
from kiln.relax.op.binary import add
from kiln.relax.op.common import (
    as_expr,
    attrs,
    check_arity,
    describe,
    fail,
    is_one,
    out_dims,
    out_dtype_attr,
    out_tensor,
    same_dtype,
    show,
    tensor_sinfo,
)
from kiln.relax.op.manipulate import permute_dims
from kiln.relax.op.registry import register_op
from kiln.relax.struct_info import INT64, StructInfo, TensorStructInfo
from kiln.tir.expr import Cast, IntImm, PrimExpr
from kiln.topi.tag import Pattern


def _infer_matmul(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 2)
    a, b = tensor_sinfo(call, 0, "x1"), tensor_sinfo(call, 1, "x2")
    out_dtype = call.attrs.get("out_dtype")
    dtype = out_dtype if out_dtype is not None else same_dtype(call, [a, b])
    if a.ndim == 0 or b.ndim == 0:
        raise fail(call, "operands must have at least one axis")
    if a.ndim < 0 or b.ndim < 0:
        return TensorStructInfo(None, dtype, -1)
    ndim = max(a.ndim, b.ndim, 2) - (a.ndim == 1) - (b.ndim == 1)
    if a.dims is None or b.dims is None:
        return TensorStructInfo(None, dtype, ndim)
    ad = list(a.dims) if a.ndim > 1 else [IntImm(a.dims[0].dtype, 1), a.dims[0]]
    bd = list(b.dims) if b.ndim > 1 else [b.dims[0], IntImm(b.dims[0].dtype, 1)]
    if dims_fit(ad[-1], bd[-2]) is Fit.FAIL:
        raise fail(
            call,
            f"reduction extents differ: {describe(call.args[0])} has {show(ad[-1])} columns, "
            f"{describe(call.args[1])} has {show(bd[-2])} rows",
        )
    batch = _batch(call, ad[:-2], bd[:-2])
    if batch is None:
        return TensorStructInfo(None, dtype, ndim)
    dims = [*batch, ad[-2], bd[-1]]
    if a.ndim == 1:
        dims.pop(-2)
    if b.ndim == 1:
        dims.pop(-1)
    return out_tensor(dims, dtype)


def _batch(call: Call, x: list[PrimExpr], y: list[PrimExpr]) -> list[PrimExpr] | None:
    n = max(len(x), len(y))
    x = [IntImm(INT64, 1)] * (n - len(x)) + x
    y = [IntImm(INT64, 1)] * (n - len(y)) + y
    out = []
    for p, q in zip(x, y):
        if is_one(p):
            out.append(q)
        elif is_one(q) or dims_fit(p, q) is Fit.PASS:
            out.append(p)
        elif dims_fit(p, q) is Fit.FAIL:
            raise fail(call, f"batch axes do not broadcast: {show(p)} vs {show(q)}")
        else:
            return None
    return out


def matmul_any(a: te.Tensor, b: te.Tensor, out_shape: Any, dtype: Any) -> te.Tensor:
    """``a @ b`` with numpy semantics into ``out_shape`` (symbolic extents allowed)."""
    k_ext = a.shape[-1]
    k = te.reduce_axis(k_ext, name="k")
    va, vb = a.ndim == 1, b.ndim == 1
    nb = len(out_shape) - (0 if va else 1) - (0 if vb else 1)

    def pick(t: te.Tensor, batch: tuple[Any, ...], tail: list[Any]) -> Any:
        lead = t.ndim - len(tail)
        own = batch[len(batch) - lead :] if lead else ()
        idx = [i if not is_one(d) else IntImm(i.dtype, 0) for d, i in zip(t.shape[:lead], own)]
        v = t[(*idx, *tail)]
        return v if v.dtype == dtype else Cast(dtype, v)

    def body(*i: Any) -> Any:
        batch = i[:nb]
        row = [] if va else [i[nb]]
        col = [] if vb else [i[-1]]
        return te.sum(pick(a, batch, [*row, k]) * pick(b, batch, [k, *col]), axis=k)

    attrs_ = topi.tag.attrs_for("matmul_any", Pattern.OUT_ELEMWISE_FUSABLE)
    return te.compute(tuple(out_shape), body, name="T_matmul", tag="matmul_any", attrs=attrs_)


def _legalize_matmul(call: Call, args: list[Any]) -> Any:
    a, b = args
    out = call.struct_info
    static = all(isinstance(d, IntImm) for d in (*a.shape, *b.shape))
    if static and a.ndim == 2 and b.ndim == 2 and str(out.dtype) == str(a.dtype):
        return topi.nn.matmul(a, b)
    return matmul_any(a, b, out_dims(call), out.dtype)


@register_op(
    "relax.matmul",
    infer=_infer_matmul,
    legalize=_legalize_matmul,
    pattern=Pattern.OUT_ELEMWISE_FUSABLE,
)
def matmul(x1: Expr, x2: Expr, out_dtype: Any = None) -> Call:
    """``x1 @ x2`` (numpy semantics: batched, broadcasting, 1-D vectors)."""
    dt = out_dtype_attr(out_dtype)
    return Call(Op.get("relax.matmul"), (as_expr(x1), as_expr(x2)), attrs(out_dtype=dt))


def linear(data: Expr, weight: Expr, bias: Expr | None = None, out_dtype: Any = None) -> Expr:
    """``data @ weight.T (+ bias)``: ``weight`` is (out_features, in_features)."""
    out = matmul(data, permute_dims(weight), out_dtype)
    return out if bias is None else add(out, bias)
