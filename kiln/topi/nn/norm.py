"""Normalization: ``layer_norm`` over trailing axes and ``batch_norm`` in inference mode.

layer_norm, with ``n`` the number of normalized elements of a row:

    mean = sum(x) / n                     (a reduction, then an element-wise scaling)
    var  = sum((x - mean) ** 2) / n       (two passes: no cancellation for large means)
    rstd = 1 / sqrt(var + eps)            (one value per row; marked no_inline)
    out  = (x - mean) * rstd * gamma + beta   (tag "layer_norm")

The output compute records ``attrs["parts"]`` (``sum``, ``mean``, ``var``, ``rstd``) for its
schedule. batch_norm precomputes ``scale = gamma / sqrt(var + eps)`` per channel (a small
no_inline compute) and is then one broadcast compute ``(x - mean) * scale + beta``.
"""

from __future__ import annotations

from typing import Any

from kiln import te
from kiln.errors import IRError, IRValueError
from kiln.te import Tensor
from kiln.tir import op as tir_op
from kiln.tir.expr import PrimExpr
from kiln.topi import tag
from kiln.topi.utils import (
    check_float,
    check_tensor,
    const_int,
    fconst,
    normalize_axes,
    normalize_axis,
    prod,
)


def _trailing_axes(x: Tensor, axis: Any) -> tuple[int, ...]:
    dims = normalize_axes("layer_norm", x, axis)
    if not dims or list(dims) != list(range(x.ndim - len(dims), x.ndim)):
        raise IRValueError(
            f"layer_norm: axes {axis!r} of tensor {x.name!r} must be the trailing axes "
            f"(for example -1, or [-2, -1])"
        )
    return dims


def _check_param(op: str, p: Any, shape: tuple[Any, ...], x: Tensor, what: str) -> Tensor | None:
    if p is None:
        return None
    p = check_tensor(op, p, what)
    if p.dtype != x.dtype:
        raise IRError(
            f"{op}: {what} tensor {p.name!r} has dtype {p.dtype} but tensor {x.name!r} has "
            f"dtype {x.dtype}"
        )
    want = [const_int(d) for d in shape]
    have = [const_int(d) for d in p.shape]
    if len(have) != len(want) or any(
        a is not None and b is not None and a != b for a, b in zip(have, want)
    ):
        raise IRValueError(
            f"{op}: {what} tensor {p.name!r} has shape {tuple(have)}, expected {tuple(want)} "
            f"(the normalized axes of tensor {x.name!r})"
        )
    return p


def _row_sum(x: Tensor, dims: tuple[int, ...], f: Any, name: str) -> Tensor:
    """``sum over dims of f(index)`` with one output per row."""
    rows = x.shape[: x.ndim - len(dims)]
    ks = [te.reduce_axis(x.shape[d], name=f"k{d}") for d in dims]
    attrs = tag.attrs_for(tag.COMM_REDUCE, reduce_dims=dims, reduce_ndim=x.ndim)
    return te.compute(
        rows, lambda *r: te.sum(f((*r, *ks)), axis=ks), name=name, tag=tag.COMM_REDUCE, attrs=attrs
    )


def _row_stats(x: Tensor, dims: tuple[int, ...], epsilon: float, name: str) -> dict[str, Tensor]:
    """``sum``, ``mean``, ``var`` (a second pass over ``x - mean``) and ``rstd`` per row."""
    exts = [const_int(x.shape[d]) for d in dims]
    if any(e is None for e in exts):
        raise IRValueError(f"layer_norm: the normalized axes of tensor {x.name!r} must be constant")
    count = prod(e for e in exts if e is not None)
    inv_n = fconst(1.0 / count if count else float("inf"), x.dtype)
    nr = x.ndim - len(dims)
    total = _row_sum(x, dims, lambda i: x[i], f"{name}_sum")
    mean = te.compute(
        total.shape,
        lambda *r: total[r] * inv_n,
        name=f"{name}_mean",
        tag=tag.ELEMWISE,
        attrs=tag.attrs_for(tag.ELEMWISE),
    )

    def sq(i: tuple[PrimExpr, ...]) -> PrimExpr:
        d = x[i] - mean[i[:nr]]
        return d * d

    var = _row_sum(x, dims, sq, f"{name}_var")
    eps = fconst(epsilon, x.dtype)
    rstd = te.compute(
        total.shape,
        lambda *r: fconst(1.0, x.dtype) / tir_op.math("sqrt", var[r] * inv_n + eps),
        name=f"{name}_rstd",
        tag=tag.ELEMWISE,
        attrs=tag.attrs_for(tag.ELEMWISE, no_inline=True),
    )
    return {"sum": total, "mean": mean, "var": var, "rstd": rstd}


def layer_norm(
    x: Tensor,
    gamma: Tensor | None = None,
    beta: Tensor | None = None,
    axis: Any = -1,
    epsilon: float = 1e-5,
    name: str = "T_layer_norm",
) -> Tensor:
    """``(x - mean) / sqrt(var + epsilon) * gamma + beta`` over the trailing ``axis`` (an int or a
    list of the last axes); ``gamma``/``beta`` have the shape of those axes (None: 1 and 0)."""
    x = check_tensor("layer_norm", x)
    check_float("layer_norm", x)
    dims = _trailing_axes(x, axis)
    nshape = tuple(x.shape[d] for d in dims)
    gamma = _check_param("layer_norm", gamma, nshape, x, "gamma")
    beta = _check_param("layer_norm", beta, nshape, x, "beta")
    parts = _row_stats(x, dims, epsilon, name)
    mean, rstd = parts["mean"], parts["rstd"]
    nr = x.ndim - len(dims)

    def out(*i: PrimExpr) -> PrimExpr:
        v = (x[i] - mean[i[:nr]]) * rstd[i[:nr]]
        v = v * gamma[i[nr:]] if gamma is not None else v
        return v + beta[i[nr:]] if beta is not None else v

    attrs = tag.attrs_for(tag.LAYER_NORM, axis=dims, parts=parts)
    return te.compute(x.shape, out, name=name, tag=tag.LAYER_NORM, attrs=attrs)


def batch_norm(
    x: Tensor,
    gamma: Tensor,
    beta: Tensor,
    moving_mean: Tensor,
    moving_var: Tensor,
    axis: int = 1,
    epsilon: float = 1e-5,
    name: str = "T_batch_norm",
) -> Tensor:
    """Inference-mode batch normalization along channel ``axis``:
    ``(x - moving_mean) / sqrt(moving_var + epsilon) * gamma + beta``."""
    x = check_tensor("batch_norm", x)
    check_float("batch_norm", x)
    ax = normalize_axis("batch_norm", x, axis)
    cshape = (x.shape[ax],)
    params = [
        _check_param("batch_norm", p, cshape, x, what)
        for p, what in (
            (gamma, "gamma"),
            (beta, "beta"),
            (moving_mean, "moving_mean"),
            (moving_var, "moving_var"),
        )
    ]
    if any(p is None for p in params):
        raise IRValueError("batch_norm: gamma, beta, moving_mean and moving_var are all required")
    g, b, mu, var = params  # type: ignore[misc]
    eps = fconst(epsilon, x.dtype)
    scale = te.compute(
        cshape,
        lambda c: g[c] / tir_op.math("sqrt", var[c] + eps),
        name=f"{name}_scale",
        tag=tag.ELEMWISE,
        attrs=tag.attrs_for(tag.ELEMWISE, no_inline=True),
    )
    return te.compute(
        x.shape,
        lambda *i: (x[i] - mu[i[ax]]) * scale[i[ax]] + b[i[ax]],
        name=name,
        tag=tag.BROADCAST,
        attrs=tag.attrs_for(tag.BROADCAST),
    )
