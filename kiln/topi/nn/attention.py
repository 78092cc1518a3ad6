"""Scaled dot-product attention as tensor expressions: ``softmax(q @ k^T * scale + bias) @ v``.

``q`` is ``[..., S, D]`` (S query rows), ``k`` is ``[..., T, D]`` and ``v`` ``[..., T, E]``
with the same leading (batch) dimensions; ``bias`` (optional) broadcasts to the scores
``[..., S, T]`` (``-inf`` masks a score out); ``scale`` defaults to ``1 / sqrt(D)``. The result
is ``[..., S, E]``.

`attention` is the target-independent definition, composed of the scores' reduction, the
softmax of `kiln.topi.nn.softmax` and the product with ``v``; `kiln.topi.x86.attention`
computes the same values one block of query rows at a time.
"""

from __future__ import annotations

import math
from typing import Any

from kiln import te
from kiln.errors import IRValueError
from kiln.te import Tensor
from kiln.topi.nn.softmax import softmax
from kiln.topi.utils import check_float, check_tensor, const_int, fconst, same_dim, show_shape


def _check_bias(bias: Any, scores: tuple[Any, ...], dtype: Any) -> Tensor:
    bias = check_tensor("attention", bias, "the bias")
    if bias.dtype != dtype:
        raise IRValueError(f"attention: bias {bias.name!r} is {bias.dtype}, the query is {dtype}")
    if bias.ndim > len(scores) or any(
        const_int(b) not in (1, None) and const_int(s) not in (None, const_int(b))
        for b, s in zip(reversed(bias.shape), reversed(scores))
    ):
        raise IRValueError(
            f"attention: bias {bias.name!r} {show_shape(bias)} does not broadcast to the scores "
            f"{tuple(const_int(s) if const_int(s) is not None else s for s in scores)}"
        )
    return bias


def check_attention(
    q: Any, k: Any, v: Any, bias: Any = None, scale: float | None = None
) -> tuple[Tensor, Tensor, Tensor, Tensor | None, float]:
    """The operands checked (same float dtype, ranks and sizes that agree), and the scale."""
    q = check_tensor("attention", q, "the query")
    k = check_tensor("attention", k, "the key")
    v = check_tensor("attention", v, "the value")
    check_float("attention", q)
    for t, what in ((k, "key"), (v, "value")):
        if t.dtype != q.dtype:
            raise IRValueError(f"attention: {what} {t.name!r} is {t.dtype}, the query is {q.dtype}")
        if t.ndim != q.ndim:
            raise IRValueError(
                f"attention: {what} {t.name!r} {show_shape(t)} has rank {t.ndim}, the query "
                f"{show_shape(q)} rank {q.ndim}"
            )
    if q.ndim < 2:
        raise IRValueError(f"attention: query {q.name!r} {show_shape(q)} needs rank >= 2")
    for what, a, b in (
        ("the query's and the key's widths", q.shape[-1], k.shape[-1]),
        ("the key's and the value's lengths", k.shape[-2], v.shape[-2]),
        *(("batch dimensions", x, y) for x, y in zip(q.shape[:-2], k.shape[:-2])),
        *(("batch dimensions", x, y) for x, y in zip(q.shape[:-2], v.shape[:-2])),
    ):
        if not same_dim(a, b):
            raise IRValueError(
                f"attention: {what} differ: query {show_shape(q)}, key {show_shape(k)}, "
                f"value {show_shape(v)}"
            )
    if scale is None:
        d = const_int(q.shape[-1])
        if d is None:
            raise IRValueError("attention: a symbolic head width needs an explicit scale")
        scale = 1.0 / math.sqrt(d)
    scores = (*q.shape[:-1], k.shape[-2])
    return q, k, v, None if bias is None else _check_bias(bias, scores, q.dtype), float(scale)


def read_bias(bias: Tensor, idx: tuple[Any, ...]) -> Any:
    """``bias`` at the score index ``idx`` (broadcast: size-1 dimensions read index 0)."""
    lead = len(idx) - bias.ndim
    return bias[tuple(0 if const_int(n) == 1 else x for x, n in zip(idx[lead:], bias.shape))]


def attention(
    q: Any, k: Any, v: Any, bias: Any = None, scale: float | None = None, name: str = "attention"
) -> Tensor:
    """``softmax(q @ k^T * scale + bias) @ v`` (module docstring)."""
    q, k, v, bias, scale = check_attention(q, k, v, bias, scale)
    nb = q.ndim - 2
    rd = te.reduce_axis(q.shape[-1], name="d")

    qk = te.compute(
        (*q.shape[:-1], k.shape[-2]),
        lambda *i: te.sum(q[(*i[:nb], i[nb], rd)] * k[(*i[:nb], i[nb + 1], rd)], axis=rd),
        name=f"{name}_qk",
    )

    def scaled(*i: Any) -> Any:
        value = qk[i] * fconst(scale, q.dtype)
        return value if bias is None else value + read_bias(bias, i)

    p = softmax(te.compute(qk.shape, scaled, name=f"{name}_score"), -1, name=f"{name}_softmax")
    rj = te.reduce_axis(k.shape[-2], name="j")
    return te.compute(
        (*q.shape[:-1], v.shape[-1]),
        lambda *i: te.sum(p[(*i[:-1], rj)] * v[(*i[:nb], rj, i[-1])], axis=rj),
        name=name,
    )
