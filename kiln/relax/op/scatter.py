"""Scatters: ``relax.scatter_elements`` (ONNX ``ScatterElements``; torch ``scatter``,
``scatter_add``, ``scatter_reduce``) and ``relax.scatter_nd`` (ONNX ``ScatterND``; torch
``index_put``). Each returns ``data`` with the ``updates`` written (or reduced) where
``indices`` say; the result has ``data``'s struct info. ``reduction`` is one of
`kiln.topi.scatter.REDUCTIONS` (``"update"`` by default); `kiln.topi.scatter` says how
duplicates and out-of-range indices behave and what the computes cost. Pattern: ``OPAQUE``.
"""

from __future__ import annotations

from typing import Any

from kiln.ir.op import Op
from kiln.relax.expr import Call, Expr
from kiln.relax.op.common import (
    as_expr,
    attrs,
    check_arity,
    describe,
    fail,
    normalize_axis,
    same_dtype,
    tensor_sinfo,
)
from kiln.relax.op.manipulate import index_sinfo
from kiln.relax.op.registry import register_op
from kiln.relax.struct_info import StructInfo
from kiln.topi import scatter as te_scatter
from kiln.topi.tag import Pattern


def _common(call: Call) -> Any:
    check_arity(call, 3)
    data = tensor_sinfo(call, 0, "data")
    idx = index_sinfo(call, 1)
    upd = tensor_sinfo(call, 2, "updates")
    same_dtype(call, [data, upd])
    if call.attrs["reduction"] not in te_scatter.REDUCTIONS:
        shown = ", ".join(repr(r) for r in te_scatter.REDUCTIONS)
        raise fail(call, f"reduction must be one of {shown}, got {call.attrs['reduction']!r}")
    return data, idx, upd


def _infer_elements(call: Call, ctx: Any) -> StructInfo:
    data, idx, upd = _common(call)
    ranks = {s.ndim for s in (data, idx, upd) if s.ndim >= 0}
    if len(ranks) > 1:
        shown = ", ".join(describe(a) for a in call.args)
        raise fail(call, f"data, indices and updates need one rank, got {shown}")
    if data.ndim >= 0:
        normalize_axis(call, call.attrs["axis"], data.ndim)
    return data


def _legalize_elements(call: Call, args: list[Any]) -> Any:
    a = call.attrs
    return te_scatter.scatter_elements(
        args[0], args[1], args[2], a["axis"], a["reduction"], a["include_self"]
    )


@register_op(
    "relax.scatter_elements",
    infer=_infer_elements,
    legalize=_legalize_elements,
    pattern=Pattern.OPAQUE,
)
def scatter_elements(
    data: Expr,
    indices: Expr,
    updates: Expr,
    axis: int = 0,
    reduction: str = "update",
    include_self: bool = True,
) -> Call:
    """``data`` with ``out[..., indices[j], ...] = updates[j]`` along ``axis`` for every
    position ``j`` of ``indices`` (``reduction`` combines instead; ``include_self=False``
    leaves the element's own value out where an update lands)."""
    return Call(
        Op.get("relax.scatter_elements"),
        (as_expr(data), as_expr(indices), as_expr(updates)),
        attrs(axis=int(axis), reduction=str(reduction), include_self=bool(include_self)),
    )


def _infer_nd(call: Call, ctx: Any) -> StructInfo:
    data, idx, upd = _common(call)
    if idx.ndim == 0:
        raise fail(call, f"indices must have at least one axis, got {describe(call.args[1])}")
    return data


@register_op(
    "relax.scatter_nd",
    infer=_infer_nd,
    legalize=lambda call, args: te_scatter.scatter_nd(*args, call.attrs["reduction"]),
    pattern=Pattern.OPAQUE,
)
def scatter_nd(data: Expr, indices: Expr, updates: Expr, reduction: str = "update") -> Call:
    """``data`` with ``out[indices[b]] = updates[b]``: the last axis of ``indices`` addresses
    the leading axes of ``data`` (``reduction`` ``"add"`` accumulates, as torch's
    ``index_put(accumulate=True)``)."""
    return Call(
        Op.get("relax.scatter_nd"),
        (as_expr(data), as_expr(indices), as_expr(updates)),
        attrs(reduction=str(reduction)),
    )
