"""Attention and bags of embeddings: ``scaled_dot_product_attention`` (kept whole when the
program is decomposed) and ``_native_multi_head_attention`` become one ``relax.nn.attention``
each, their masks an additive bias (a boolean mask: 0 where a score takes part, ``-inf``
where it does not; ``is_causal``: the lower triangle); ``_embedding_bag`` sums, averages or
takes the max of the rows of each bag (a bag-membership matrix times the looked-up rows).

Converters join `ATEN` when this module is imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kiln.errors import FrontendError
from kiln.relax import op as R
from kiln.relax.expr import Expr, const
from kiln.relax.frontend.torch.aten import TorchCtx, aten, dims_of, shape_arg


def _bias_of_mask(ctx: TorchCtx, mask: Expr, dtype: str, masked_when: bool) -> Expr:
    """A boolean mask as an additive bias: ``-inf`` where it is ``masked_when``, else 0."""
    zero, ninf = ctx.tensor(0.0, dtype), ctx.tensor(float("-inf"), dtype)
    if str(mask.struct_info.dtype) != "bool":
        return ctx.tensor(mask, dtype)
    return ctx.emit(R.where(mask, ninf, zero) if masked_when else R.where(mask, zero, ninf))


def _causal(rows: int, cols: int, dtype: str) -> Expr:
    keep = np.tril(np.ones((rows, cols), bool))
    return const(np.where(keep, 0.0, -np.inf).astype(dtype))


def _heads_like(ctx: TorchCtx, t: Expr, q: Expr) -> Expr:
    """``t`` ``[..., Hk, S, E]`` with its heads repeated to ``q``'s (grouped-query attention)
    and its batch dims broadcast to ``q``'s."""
    qd, td = dims_of(q), dims_of(t)
    if len(td) >= 3 and td[-3] != qd[-3]:
        rep = qd[-3] // td[-3]
        wide = ctx.emit(R.expand_dims(t, [len(td) - 2]))
        spread = [*td[:-2], rep, *td[-2:]]
        wide = ctx.emit(R.broadcast_to(wide, shape_arg(spread)))
        t = ctx.emit(R.reshape(wide, shape_arg([*td[:-3], qd[-3], *td[-2:]])))
        td = dims_of(t)
    if td[:-2] != qd[:-2]:
        t = ctx.emit(R.broadcast_to(t, shape_arg([*qd[:-2], *td[-2:]])))
    return t


@aten("scaled_dot_product_attention.default")
def _sdpa(ctx: TorchCtx, q: Expr, k: Expr, v: Expr, attn_mask: Any = None,
          dropout_p: float = 0.0, is_causal: bool = False, scale: Any = None,
          enable_gqa: bool = False) -> Expr:  # fmt: skip
    if dropout_p:
        raise FrontendError(
            f"attention dropout (p={dropout_p}) is random; export the model in eval() mode"
        )
    dt = str(q.struct_info.dtype)
    k, v = _heads_like(ctx, k, q), _heads_like(ctx, v, q)
    bias = None
    if attn_mask is not None:
        bias = _bias_of_mask(ctx, attn_mask, dt, masked_when=False)
    if is_causal:
        bias = _causal(dims_of(q)[-2], dims_of(k)[-2], dt)
    return ctx.emit(R.nn.attention(q, k, v, bias, scale))


def _project(ctx: TorchCtx, x: Expr, w: Expr, b: Any, heads: int) -> Expr:
    """``x @ w^T + b`` ``[B, L, E]`` split into heads ``[B, H, L, E / H]``."""
    y = ctx.emit(R.matmul(x, ctx.emit(R.permute_dims(w, [1, 0]))))
    if b is not None:
        y = ctx.emit(R.add(y, b))
    bsz, length, e = dims_of(y)
    y = ctx.emit(R.reshape(y, shape_arg([bsz, length, heads, e // heads])))
    return ctx.emit(R.permute_dims(y, [0, 2, 1, 3]))


def _mha_bias(ctx: TorchCtx, mask: Any, mask_type: Any, dtype: str) -> Expr | None:
    """The additive bias of ``_native_multi_head_attention``'s mask (True: left out):
    ``mask_type`` 1 is a key padding mask ``[B, S]``, else an attention mask that broadcasts
    to ``[B, H, L, S]``."""
    if mask is None:
        return None
    bias = _bias_of_mask(ctx, mask, dtype, masked_when=True)
    if mask_type == 1:
        bsz, src = dims_of(bias)
        bias = ctx.emit(R.reshape(bias, shape_arg([bsz, 1, 1, src])))
    return bias


@aten("_native_multi_head_attention.default")
def _mha(ctx: TorchCtx, query: Expr, key: Expr, value: Expr, embed_dim: int, num_head: int,
         qkv_weight: Expr, qkv_bias: Any, proj_weight: Expr, proj_bias: Any, mask: Any = None,
         need_weights: bool = True, average_attn_weights: bool = True,
         mask_type: Any = None) -> tuple[Expr, Any]:  # fmt: skip
    """``nn.MultiheadAttention``'s fused inference path (batch first): the packed input
    projection, attention per head, the output projection; the weights (averaged over heads
    unless told otherwise) when ``need_weights``."""
    e, dt = int(embed_dim), str(query.struct_info.dtype)

    def thirds(t: Any) -> list[Any]:
        if t is None:
            return [None] * 3
        return [ctx.emit(R.strided_slice(t, [0], [i * e], [(i + 1) * e])) for i in range(3)]

    w, b = thirds(qkv_weight), thirds(qkv_bias)
    q, k, v = (_project(ctx, t, wi, bi, num_head) for t, wi, bi in zip((query, key, value), w, b))
    bias = _mha_bias(ctx, mask, mask_type, dt)
    weights = None
    if need_weights:
        kt = ctx.emit(R.permute_dims(k, [0, 1, 3, 2]))
        scores = ctx.emit(R.multiply(R.matmul(q, kt), ctx.tensor((e // num_head) ** -0.5, dt)))
        if bias is not None:
            scores = ctx.emit(R.add(scores, bias))
        probs = ctx.emit(R.nn.softmax(scores, -1))
        heads = ctx.emit(R.matmul(probs, v))
        weights = ctx.emit(R.mean(probs, [1])) if average_attn_weights else probs
    else:
        heads = ctx.emit(R.nn.attention(q, k, v, bias))
    bsz, _, length, _ = dims_of(heads)
    merged = ctx.emit(R.permute_dims(heads, [0, 2, 1, 3]))
    merged = ctx.emit(R.reshape(merged, shape_arg([bsz, length, e])))
    out = ctx.emit(R.matmul(merged, ctx.emit(R.permute_dims(proj_weight, [1, 0]))))
    if proj_bias is not None:
        out = ctx.emit(R.add(out, proj_bias))
    return out, weights


@aten("_embedding_bag.default", "_embedding_bag_forward_only.default")
def _embedding_bag(ctx: TorchCtx, weight: Expr, indices: Expr, offsets: Expr,
                   scale_grad_by_freq: bool = False, mode: int = 0, sparse: bool = False,
                   per_sample_weights: Any = None, include_last_offset: bool = False,
                   padding_idx: int = -1) -> tuple:  # fmt: skip
    """Bags of rows: bag ``j`` holds indices ``offsets[j]..offsets[j+1]``; ``mode`` 0 sums
    (weighted by ``per_sample_weights``), 1 averages, 2 takes the max; an index equal to
    ``padding_idx`` is left out; an empty bag gives zeros. Also the bag of each index and the
    bag sizes (the max's argmax is not computed: zeros)."""
    (n,) = dims_of(indices)
    bags = dims_of(offsets)[0] - (1 if include_last_offset else 0)
    dt = str(weight.struct_info.dtype)
    pos = const(np.arange(n, dtype="int64").reshape(n, 1))
    starts = ctx.emit(R.astype(R.strided_slice(offsets, [0], [1], [bags]), "int64"))
    after = ctx.emit(R.astype(R.less_equal(R.expand_dims(starts, [0]), pos), "int64"))
    bag_of = ctx.emit(R.sum(after, [1]))
    member = ctx.emit(R.equal(R.expand_dims(bag_of, [0]), const(np.arange(bags).reshape(-1, 1))))
    if padding_idx is not None and padding_idx >= 0:
        keep = R.not_equal(indices, ctx.tensor(padding_idx, str(indices.struct_info.dtype)))
        member = ctx.emit(R.logical_and(member, R.expand_dims(keep, [0])))
    rows = ctx.emit(R.take(weight, indices, 0))
    if per_sample_weights is not None:
        rows = ctx.emit(R.multiply(rows, R.expand_dims(per_sample_weights, [1])))
    count = ctx.emit(R.sum(ctx.emit(R.astype(member, "int64")), [1], True))
    if mode == 2:
        spread = ctx.emit(R.where(R.expand_dims(member, [2]), R.expand_dims(rows, [0]),
                                  ctx.tensor(float("-inf"), dt)))  # fmt: skip
        out = ctx.emit(R.max(spread, [1]))
        out = ctx.emit(R.where(R.greater(count, ctx.tensor(0, "int64")), out, ctx.tensor(0, dt)))
    else:
        out = ctx.emit(R.matmul(ctx.emit(R.astype(member, dt)), rows))
        if mode == 1:
            denom = ctx.emit(R.astype(R.maximum(count, ctx.tensor(1, "int64")), dt))
            out = ctx.emit(R.divide(out, denom))
    sizes = ctx.emit(R.reshape(count, shape_arg([bags])))
    argmax = ctx.emit(R.zeros(shape_arg(dims_of(out) if mode == 2 else [bags]), "int64"))
    return out, bag_of, sizes, argmax
