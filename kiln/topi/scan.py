"""Running reductions along an axis: `cumsum`, `cumprod` (inclusive or exclusive, forward or
reversed). Each output element reduces its prefix (or suffix) with a reduction axis over the
whole extent and a ``where`` bound: O(n^2) along the axis, fine for the short axes models use."""

from __future__ import annotations

from typing import Any

from kiln import te
from kiln.tir.expr import PrimExpr, const
from kiln.topi import tag
from kiln.topi.utils import normalize_axis

_PROD = te.comm_reducer(lambda a, b: a * b, lambda t: const(1, t), name="prod")


def _scan(x: te.Tensor, axis: int, exclusive: bool, reverse: bool, kind: str) -> te.Tensor:
    ax = normalize_axis("cumsum" if kind == "sum" else "cumprod", x, axis)
    k = te.reduce_axis(x.shape[ax], name="k")
    reducer = te.sum if kind == "sum" else _PROD

    def body(*i: PrimExpr) -> PrimExpr:
        pos = i[ax]
        if reverse:
            keep = k > pos if exclusive else k >= pos
        else:
            keep = k < pos if exclusive else k <= pos
        idx = (*i[:ax], k, *i[ax + 1 :])
        return reducer(x[idx], axis=k, where=keep)

    attrs = tag.attrs_for(tag.COMM_REDUCE)
    return te.compute(x.shape, body, name=f"T_cum{kind}", tag=tag.COMM_REDUCE, attrs=attrs)


def cumsum(x: te.Tensor, axis: int, exclusive: bool = False, reverse: bool = False) -> Any:
    """The running sum of ``x`` along ``axis``."""
    return _scan(x, axis, exclusive, reverse, "sum")


def cumprod(x: te.Tensor, axis: int, exclusive: bool = False, reverse: bool = False) -> Any:
    """The running product of ``x`` along ``axis``."""
    return _scan(x, axis, exclusive, reverse, "prod")
