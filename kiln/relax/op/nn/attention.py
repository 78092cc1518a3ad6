"""Scaled dot-product attention (``relax.nn.attention``).

``attention(query, key, value, bias=None, scale=None)`` is ``softmax(query @ key^T * scale +
bias) @ value`` over the last two axes: ``query [..., S, D]``, ``key [..., T, D]``, ``value
[..., T, E]`` with the same leading dimensions, ``bias`` (optional) broadcasting to the scores
``[..., S, T]`` (``-inf`` masks a score out), ``scale`` defaulting to ``1 / sqrt(D)``; the result
is ``[..., S, E]``. Pattern ``OPAQUE``: one kernel of its own, which on the CPU never holds more
than one block of query rows' scores (`kiln.topi.x86.attention`). `FuseAttention` makes it from
the matmul / softmax / matmul chain of an imported model.
"""

from __future__ import annotations

from typing import Any

from kiln import topi
from kiln.ir.op import Op
from kiln.relax.analysis.struct_info import Fit, dims_fit
from kiln.relax.expr import Call, Expr
from kiln.relax.op.common import (
    as_expr,
    attrs,
    broadcast_dims,
    describe,
    fail,
    out_tensor,
    require_float,
    same_dtype,
    show,
    tensor_sinfo,
)
from kiln.relax.op.registry import register_op
from kiln.relax.struct_info import StructInfo
from kiln.topi.tag import Pattern


def _differ(a: Any, b: Any) -> bool:
    return dims_fit(a, b) is Fit.FAIL


def _infer_attention(call: Call, ctx: Any) -> StructInfo:
    if len(call.args) not in (3, 4):
        raise fail(call, f"takes query, key, value and an optional bias, got {len(call.args)}")
    q, k, v = (tensor_sinfo(call, i, w) for i, w in enumerate(("the query", "the key", "value")))
    infos = [q, k, v] + ([tensor_sinfo(call, 3, "the bias")] if len(call.args) == 4 else [])
    require_float(call, q)
    dtype = same_dtype(call, infos)
    if any(t.ndim >= 0 and t.ndim != q.ndim for t in (k, v)) or 0 <= q.ndim < 2:
        shown = ", ".join(describe(a) for a in call.args[:3])
        raise fail(call, f"query, key and value need one rank of at least 2, got {shown}")
    if q.dims is None or k.dims is None or v.dims is None:
        return out_tensor(None, dtype, q.ndim)
    pairs = [(q.dims[-1], k.dims[-1], "query and key widths")]
    pairs.append((k.dims[-2], v.dims[-2], "key and value lengths"))
    pairs += [(a, b, "batch dimensions") for t in (k, v) for a, b in zip(q.dims[:-2], t.dims[:-2])]
    for a, b, what in pairs:
        if _differ(a, b):
            raise fail(call, f"{what} differ: {show(a)} vs {show(b)}")
    if len(infos) == 4 and infos[3].dims is not None:
        scores = [*q.dims[:-1], k.dims[-2]]
        both = broadcast_dims(call, [out_tensor(scores, dtype), infos[3]])
        if both is not None and (len(both) > len(scores) or any(map(_differ, both, scores))):
            raise fail(call, f"the bias {describe(call.args[3])} is larger than the scores")
    return out_tensor([*q.dims[:-1], v.dims[-1]], dtype)


def _legalize_attention(call: Call, args: list[Any]) -> Any:
    bias = args[3] if len(args) == 4 else None
    return topi.nn.attention(args[0], args[1], args[2], bias, call.attrs["scale"])


@register_op(
    "relax.nn.attention",
    infer=_infer_attention,
    legalize=_legalize_attention,
    pattern=Pattern.OPAQUE,
)
def attention(
    query: Expr, key: Expr, value: Expr, bias: Expr | None = None, scale: float | None = None
) -> Call:
    """``softmax(query @ key^T * scale + bias) @ value`` (see the module docstring)."""
    args = [as_expr(query), as_expr(key), as_expr(value)]
    if bias is not None:
        args.append(as_expr(bias))
    return Call(Op.get("relax.nn.attention"), tuple(args), attrs(scale=scale))
