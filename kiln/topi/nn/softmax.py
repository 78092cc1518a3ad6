"""``softmax`` and ``log_softmax`` over one axis.

    m = max(x, axis)                      (a COMM_REDUCE compute)
    e = exp(x - m)                        (element-wise; inlined by the schedule)
    s = sum(e, axis)
    softmax     = e / s                   (tag "softmax")
    log_softmax = x - m - log(s)          (tag "log_softmax"; log(s) is its own small compute)

The output compute records its parts in ``attrs["parts"]`` (``max``, ``exp``, ``sum`` and, for
log_softmax, ``lse``) and the axis in ``attrs["axis"]``, so the schedule finds them.

For float32 the exponential is `kiln.topi.math.exp_nonpositive` on ``max(x, m - 87.3) - m``:
the argument is never positive, and clamping it at -87.3 keeps it inside the polynomial's range
(``exp(-87.3)`` is about 1e-38, so a clamped term changes a probability by less than that).
Writing the clamp as ``max(x, m - 87.3) - m`` rather than ``max(x - m, -87.3)`` keeps GCC able
to vectorize the loop (it folds a constant operation into a select with a constant arm, which it
then cannot if-convert). float16 and float64 use libm's ``exp``.
"""

from __future__ import annotations

from typing import Any

from kiln import te
from kiln.errors import IRValueError
from kiln.te import Tensor
from kiln.tir import op as tir_op
from kiln.tir.expr import Cast, Max, PrimExpr
from kiln.topi import tag
from kiln.topi.math import EXP_LO, exp_nonpositive
from kiln.topi.utils import check_float, check_tensor, fconst, normalize_axis


def _without(idx: tuple[PrimExpr, ...], ax: int) -> tuple[PrimExpr, ...]:
    return idx[:ax] + idx[ax + 1 :]


def _with(idx: tuple[PrimExpr, ...], ax: int, k: Any) -> tuple[PrimExpr, ...]:
    return idx[:ax] + (k,) + idx[ax:]


def shifted_exp(x: Tensor, m: Tensor, ax: int, name: str, valid: int | None = None) -> Tensor:
    """``exp(x - m)`` with the row values ``m`` broadcast along ``ax`` (see the module
    docstring for float32's clamp); with ``valid``, zero past the row's first ``valid``
    entries (a row padded to whole vectors)."""

    def f(*i: PrimExpr) -> PrimExpr:
        v, mv = x[i], m[_without(i, ax)]
        if x.dtype.bits == 32:
            e = exp_nonpositive(Max(v, mv + fconst(EXP_LO, x.dtype)) - mv)
        else:
            e = tir_op.math("exp", v - mv)
        if valid is None:
            return e
        # NOTE: a product with the 0/1 mask, not a select: the C select evaluates one side only,
        # so GCC gathers the scores it reads under the mask (a masked load per vector)
        return e * Cast(x.dtype, i[ax] < valid)

    return te.compute(x.shape, f, name=name, tag=tag.BROADCAST, attrs=tag.attrs_for(tag.BROADCAST))


def row_reduce(x: Tensor, ax: int, reducer: te.Reducer, name: str) -> Tensor:
    """``reducer`` of ``x`` along ``ax`` (that axis dropped), tagged a row reduction."""
    shape = _without(tuple(x.shape), ax)
    k = te.reduce_axis(x.shape[ax], name="k")
    attrs = tag.attrs_for(tag.COMM_REDUCE, reduce_dims=(ax,), reduce_ndim=x.ndim)
    return te.compute(
        shape,
        lambda *i: reducer(x[_with(i, ax, k)], axis=k),
        name=name,
        tag=tag.COMM_REDUCE,
        attrs=attrs,
    )


def _parts(op: str, x: Any, axis: int, name: str) -> tuple[Tensor, int, Tensor, Tensor, Tensor]:
    x = check_tensor(op, x)
    check_float(op, x)
    if x.ndim == 0:
        raise IRValueError(f"{op}: tensor {x.name!r} is a scalar; {op} needs at least one axis")
    ax = normalize_axis(op, x, axis)
    m = row_reduce(x, ax, te.max, f"{name}_max")
    e = shifted_exp(x, m, ax, f"{name}_exp")
    s = row_reduce(e, ax, te.sum, f"{name}_sum")
    return x, ax, m, e, s


def softmax(x: Tensor, axis: int = -1, name: str = "T_softmax") -> Tensor:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis`` (float tensors)."""
    x, ax, m, e, s = _parts("softmax", x, axis, name)
    inv = te.compute(
        s.shape,
        lambda *i: fconst(1.0, x.dtype) / s[i],
        name=f"{name}_inv",
        tag=tag.ELEMWISE,
        attrs=tag.attrs_for(tag.ELEMWISE, no_inline=True),
    )
    attrs = tag.attrs_for(tag.SOFTMAX, axis=ax, parts={"max": m, "exp": e, "sum": s, "inv": inv})
    return te.compute(
        x.shape, lambda *i: e[i] * inv[_without(i, ax)], name=name, tag=tag.SOFTMAX, attrs=attrs
    )


def log_softmax(x: Tensor, axis: int = -1, name: str = "T_log_softmax") -> Tensor:
    """``x - max - log(sum(exp(x - max)))`` along ``axis`` (float tensors)."""
    x, ax, m, e, s = _parts("log_softmax", x, axis, name)
    lse = te.compute(
        s.shape,
        lambda *i: tir_op.math("log", s[i]),
        name=f"{name}_lse",
        tag=tag.ELEMWISE,
        attrs=tag.attrs_for(tag.ELEMWISE, no_inline=True),
    )
    attrs = tag.attrs_for(
        tag.LOG_SOFTMAX, axis=ax, parts={"max": m, "exp": e, "sum": s, "lse": lse}
    )

    def f(*i: PrimExpr) -> PrimExpr:
        row = _without(i, ax)
        return x[i] - m[row] - lse[row]

    return te.compute(x.shape, f, name=name, tag=tag.LOG_SOFTMAX, attrs=attrs)
