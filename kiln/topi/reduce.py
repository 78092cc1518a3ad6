"""Reductions: ``sum``, ``mean``, ``max`` and ``min`` over axes.

``axis`` is None (every axis), an int or a list of ints; negative axes count from the end.
``keepdims=True`` keeps each reduced axis with extent 1. ``max``, ``min``, ``argmax`` and
``argmin`` over an axis of constant extent 0 are an error (numpy raises: the extreme of no
elements is undefined); over a symbolic extent that is 0 at run time they give the reduction's
identity (`lowest` / `highest`: -inf / inf for floats, else the dtype's lowest / highest
value). The result has the input's dtype and accumulates in it (as TVM does; numpy widens
integer sums). ``mean`` is the sum followed by an element-wise scaling by ``1 / count`` and
takes float tensors only. ``max`` and ``min`` of float values holding a NaN are NaN (TIR
``Max``/``Min`` propagate NaN), and ``argmax`` / ``argmin`` then give the first NaN's index, as
numpy does.

Every reduction is a ``COMM_REDUCE`` compute whose ``attrs`` also record ``"reduce_dims"`` (the
reduced input axes), ``"reduce_ndim"`` (the input's rank) and ``"keepdims"``; the default
schedule reads them to tell whether the innermost input axis is reduced.
"""

from __future__ import annotations

import math
from typing import Any

from kiln import te
from kiln.errors import IRValueError
from kiln.ir.dtype import DataType
from kiln.te import Tensor
from kiln.tir.expr import Cast, Max, Min, PrimExpr, Select, const, convert
from kiln.tir.op import max_value, min_value
from kiln.topi import tag
from kiln.topi.utils import (
    check_float,
    check_numeric,
    check_tensor,
    const_int,
    fconst,
    normalize_axes,
)


def _out_shape(x: Tensor, dims: tuple[int, ...], keepdims: bool) -> tuple[PrimExpr, ...]:
    shape: list[PrimExpr] = []
    for d, ext in enumerate(x.shape):
        if d not in dims:
            shape.append(ext)
        elif keepdims:
            shape.append(convert(1, ext.dtype))
    return tuple(shape)


def _input_index(
    x: Tensor,
    dims: tuple[int, ...],
    keepdims: bool,
    out_idx: tuple[PrimExpr, ...],
    raxes: list[Any],
) -> tuple[PrimExpr, ...]:
    """The input index read for output ``out_idx`` and reduction axes ``raxes``."""
    idx: list[PrimExpr] = []
    it = iter(out_idx)
    red = iter(raxes)
    for d in range(x.ndim):
        if d in dims:
            idx.append(next(red))
            if keepdims:
                next(it)
        else:
            idx.append(next(it))
    return tuple(idx)


def reduce(
    op: str, x: Tensor, axis: Any, keepdims: bool, reducer: te.Reducer, name: str | None
) -> Tensor:
    """``reducer`` over ``axis`` of ``x`` (see module docstring)."""
    x = check_tensor(op, x)
    check_numeric(op, x)
    dims = normalize_axes(op, x, axis)
    raxes = [te.reduce_axis(x.shape[d], name=f"k{d}") for d in dims]
    shape = _out_shape(x, dims, keepdims)
    attrs = tag.attrs_for(tag.COMM_REDUCE, reduce_dims=dims, reduce_ndim=x.ndim, keepdims=keepdims)
    if not raxes:  # numpy: reducing over no axis returns the values unchanged
        return te.compute(
            x.shape,
            lambda *i: x[i],
            name=name or f"T_{op}",
            tag=tag.ELEMWISE,
            attrs=tag.attrs_for(tag.ELEMWISE),
        )

    def body(*out_idx: PrimExpr) -> PrimExpr:
        return reducer(x[_input_index(x, dims, keepdims, out_idx, raxes)], axis=raxes)

    return te.compute(shape, body, name=name or f"T_{op}", tag=tag.COMM_REDUCE, attrs=attrs)


def sum(x: Tensor, axis: Any = None, keepdims: bool = False, name: str | None = None) -> Tensor:  # noqa: A001
    """The sum over ``axis``."""
    return reduce("sum", x, axis, keepdims, te.sum, name)


def _check_nonempty(op: str, x: Any, axis: Any) -> None:
    """An extreme over an axis of constant extent 0 is undefined: raise, as numpy does."""
    x = check_tensor(op, x)
    for d in normalize_axes(op, x, axis):
        if const_int(x.shape[d]) == 0:
            raise IRValueError(
                f"{op}: axis {d} of tensor {x.name!r} has extent 0; the {op} of no elements is "
                "undefined (numpy raises too): reduce a non-empty axis"
            )


def lowest(dtype: DataType) -> PrimExpr:
    """The identity of a maximum: ``-inf`` for floats, else the dtype's lowest value."""
    return fconst(-math.inf, dtype) if dtype.is_float else min_value(dtype)


def highest(dtype: DataType) -> PrimExpr:
    """The identity of a minimum: ``inf`` for floats, else the dtype's highest value."""
    return fconst(math.inf, dtype) if dtype.is_float else max_value(dtype)


# NOTE: `te.max` / `te.min` start from the lowest / highest *finite* float, so the maximum of
# values that are all -inf came out as -3.4e38; these start from -inf / inf (numpy's and
# onnxruntime's answer). Softmax's row maximum keeps `te.max`: a row of -inf stays uniform.
max_reducer = te.comm_reducer(Max, lowest, name="max")
min_reducer = te.comm_reducer(Min, highest, name="min")


def max(x: Tensor, axis: Any = None, keepdims: bool = False, name: str | None = None) -> Tensor:  # noqa: A001
    """The maximum over ``axis``."""
    _check_nonempty("max", x, axis)
    return reduce("max", x, axis, keepdims, max_reducer, name)


def min(x: Tensor, axis: Any = None, keepdims: bool = False, name: str | None = None) -> Tensor:  # noqa: A001
    """The minimum over ``axis``."""
    _check_nonempty("min", x, axis)
    return reduce("min", x, axis, keepdims, min_reducer, name)


def mean(x: Tensor, axis: Any = None, keepdims: bool = False, name: str | None = None) -> Tensor:
    """The arithmetic mean over ``axis`` (float tensors): the sum, then a scaling by 1/count."""
    x = check_tensor("mean", x)
    check_float("mean", x)
    dims = normalize_axes("mean", x, axis)
    total = reduce("mean", x, dims, keepdims, te.sum, f"{name or 'T_mean'}_sum")
    count = 1
    for d in dims:
        ext = x.shape[d]
        count = count * ext if count != 1 else ext  # type: ignore[assignment]
    scale = _reciprocal(count, x)
    return te.compute(
        total.shape,
        lambda *i: total[i] * scale,
        name=name or "T_mean",
        tag=tag.ELEMWISE,
        attrs=tag.attrs_for(tag.ELEMWISE),
    )


def _reciprocal(count: Any, x: Tensor) -> PrimExpr:
    """``1 / count`` in ``x``'s dtype (``count`` may be symbolic; an empty reduction gives inf,
    so its mean is NaN as in numpy)."""
    value = count if isinstance(count, int) else getattr(count, "value", None)
    if value is not None:
        return fconst(1.0 / value if value else float("inf"), x.dtype)
    return fconst(1.0, x.dtype) / Cast(x.dtype, count)


_prod = te.comm_reducer(lambda a, b: a * b, lambda t: const(1, t), name="prod")


def prod(x: Tensor, axis: Any = None, keepdims: bool = False, name: str | None = None) -> Tensor:
    """The product over ``axis``."""
    return reduce("prod", x, axis, keepdims, _prod, name)


def variance(
    x: Tensor, axis: Any = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """The (population) variance over ``axis``: the mean of the squared distance to the mean,
    computed in two passes (float tensors)."""
    x = check_tensor("variance", x)
    check_float("variance", x)
    dims = normalize_axes("variance", x, axis)
    center = mean(x, dims, keepdims=True, name=f"{name or 'T_variance'}_mean")

    def sq(*i: PrimExpr) -> PrimExpr:
        d = x[i] - center[tuple(convert(0, v.dtype) if k in dims else v for k, v in enumerate(i))]
        return d * d

    dev = te.compute(
        x.shape,
        sq,
        name=f"{name or 'T_variance'}_sq",
        tag=tag.ELEMWISE,
        attrs=tag.attrs_for(tag.ELEMWISE),
    )
    return mean(dev, dims, keepdims=keepdims, name=name or "T_variance")


def _arg_reduce(op: str, x: Tensor, axis: Any, keepdims: bool, extreme: Tensor) -> Tensor:
    """The first index along ``axis`` (None: the flat index) where ``x`` equals ``extreme``."""
    dims = normalize_axes(op, x, None if axis is None else [axis])
    raxes = [te.reduce_axis(x.shape[d], name=f"k{d}") for d in dims]
    i64 = DataType("int", 64)
    shape = _out_shape(x, dims, keepdims)

    def flat(ks: list[Any]) -> PrimExpr:
        out: PrimExpr = convert(0, i64)
        for d, k in zip(dims, ks):
            out = out * Cast(i64, x.shape[d]) + Cast(i64, k)
        return out

    def body(*out_idx: PrimExpr) -> PrimExpr:
        idx = _input_index(x, dims, keepdims, out_idx, raxes)
        hit = x[idx].eq(extreme[tuple(out_idx)])
        if x.dtype.is_float:  # a NaN extreme (max/min propagate NaN) is the first NaN's index
            hit = hit | x[idx].ne(x[idx])
        return te.min(Select(hit, flat(raxes), max_value(i64)), axis=raxes)

    attrs = tag.attrs_for(tag.COMM_REDUCE, reduce_dims=dims, reduce_ndim=x.ndim, keepdims=keepdims)
    return te.compute(shape, body, name=f"T_{op}", tag=tag.COMM_REDUCE, attrs=attrs)


def argmax(x: Tensor, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """The int64 index of the (first) largest element along ``axis`` (None: flat index)."""
    x = check_tensor("argmax", x)
    check_numeric("argmax", x)
    _check_nonempty("argmax", x, None if axis is None else [axis])
    dims = normalize_axes("argmax", x, None if axis is None else [axis])
    return _arg_reduce("argmax", x, axis, keepdims, max(x, dims, keepdims=keepdims))


def argmin(x: Tensor, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """The int64 index of the (first) smallest element along ``axis`` (None: flat index)."""
    x = check_tensor("argmin", x)
    check_numeric("argmin", x)
    _check_nonempty("argmin", x, None if axis is None else [axis])
    dims = normalize_axes("argmin", x, None if axis is None else [axis])
    return _arg_reduce("argmin", x, axis, keepdims, min(x, dims, keepdims=keepdims))
