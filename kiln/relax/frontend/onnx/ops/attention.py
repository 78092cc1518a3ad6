"""``Attention`` (opset 23+): scaled dot-product attention written with matmul, softmax and
element-wise operators.

Covered: 3-D (heads packed, ``q_num_heads``/``kv_num_heads``) and 4-D inputs, a key/value cache
(``past_key``/``past_value`` concatenated; ``present_*`` outputs), grouped heads (kv heads
repeated), bool or additive masks (a mask shorter than the keys is padded as masked),
``is_causal`` aligned to the cache, ``scale``, ``softcap``, the four ``qk_matmul_output_mode``
outputs, rows whose every key is masked giving 0. Not covered: ``nonpad_kv_seqlen`` and sliding
windows (a `FrontendError`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from kiln.errors import FrontendError
from kiln.relax import op as R
from kiln.relax.expr import Expr, const
from kiln.relax.frontend.onnx.ops import Ctx, Node, converter, dim_values, dtype, ndim
from kiln.relax.frontend.onnx.ops.elementwise import scalar


def _heads(ctx: Ctx, x: Expr, heads: int) -> Expr:
    """(B, S, H*D) -> (B, H, S, D)."""
    b, s, hidden = dim_values(x)
    x = ctx.emit(R.reshape(x, [b, s, heads, hidden // heads]))
    return ctx.emit(R.permute_dims(x, [0, 2, 1, 3]))


def _repeat_heads(ctx: Ctx, x: Expr, times: int) -> Expr:
    """(B, H, L, D) -> (B, H*times, L, D), each head repeated ``times`` in a row."""
    b, h, n, d = dim_values(x)
    wide = ctx.emit(R.broadcast_to(R.expand_dims(x, [2]), [b, h, times, n, d]))
    return ctx.emit(R.reshape(wide, [b, h * times, n, d]))


def _bias(ctx: Ctx, node: Node, mask: Any, q: Expr, rows: int, cols: int, past: int) -> Expr:
    """The additive attention bias (broadcastable to (B, H, S, L))."""
    dt = dtype(q)
    ninf = scalar(-np.inf, q)
    bias: Expr | None = None
    if mask is not None:
        m = ctx.expr(mask)
        short = cols - int(dim_values(m)[-1])
        if dtype(m) == "bool":
            if short > 0:
                m = ctx.emit(R.concat([m, const(np.zeros((*_lead(m), short), bool))], -1))
            m = ctx.emit(R.where(m, scalar(0, q), ninf))
        elif short > 0:
            pad = const(np.full((*_lead(m), short), -np.inf, dt))
            m = ctx.emit(R.concat([m, pad], -1))
        bias = m
    if node.attrs.get("is_causal", 0):
        i = np.arange(rows).reshape(rows, 1)
        j = np.arange(cols).reshape(1, cols)
        causal = const(np.where(j <= i + past, 0, -np.inf).astype(dt))
        bias = causal if bias is None else ctx.emit(R.add(bias, causal))
    return bias if bias is not None else const(np.zeros((rows, cols), dt))


def _lead(m: Expr) -> list[int]:
    return [int(d) for d in dim_values(m)[:-1]]


@converter("Attention")
def _attention(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    if len(ins) > 6 and ins[6] is not None:
        raise FrontendError("Attention with nonpad_kv_seqlen is not supported")
    if node.attrs.get("left_window_size", -1) >= 0 or node.attrs.get("right_window_size", -1) >= 0:
        raise FrontendError("Attention with a sliding window is not supported")
    q, k, v = (ctx.tensor(ins, i) for i in range(3))
    rank3 = ndim(q) == 3
    if rank3:
        q = _heads(ctx, q, node.attrs["q_num_heads"])
        k = _heads(ctx, k, node.attrs["kv_num_heads"])
        v = _heads(ctx, v, node.attrs["kv_num_heads"])
    past = 0
    if len(ins) > 4 and ins[4] is not None:
        past_k, past_v = ctx.tensor(ins, 4), ctx.tensor(ins, 5)
        past = int(dim_values(past_k)[2])
        k = ctx.emit(R.concat([past_k, k], 2))
        v = ctx.emit(R.concat([past_v, v], 2))
    present_k, present_v = k, v
    qh, kh = int(dim_values(q)[1]), int(dim_values(k)[1])
    if qh != kh:
        k, v = _repeat_heads(ctx, k, qh // kh), _repeat_heads(ctx, v, qh // kh)
    rows, cols = int(dim_values(q)[2]), int(dim_values(k)[2])
    scale = node.attrs.get("scale", 1 / math.sqrt(int(dim_values(q)[3])))
    root = scalar(math.sqrt(scale), q)
    kt = ctx.emit(R.permute_dims(R.multiply(k, root), [0, 1, 3, 2]))
    scores = ctx.emit(R.matmul(ctx.emit(R.multiply(q, root)), kt))
    qk_out = scores
    cap = node.attrs.get("softcap", 0.0)
    if cap and cap > 0:
        scores = ctx.emit(R.multiply(R.tanh(R.divide(scores, scalar(cap, q))), scalar(cap, q)))
        qk_out = scores
    bias = _bias(ctx, node, ins[3] if len(ins) > 3 else None, q, rows, cols, past)
    biased = ctx.emit(R.add(scores, bias))
    mode = node.attrs.get("qk_matmul_output_mode", 0)
    if mode == 2:
        qk_out = biased
    probs = ctx.emit(R.nn.softmax(biased, -1))
    masked_row = ctx.emit(R.equal(R.max(bias, [-1], True), scalar(-np.inf, q)))
    probs = ctx.emit(R.where(masked_row, scalar(0, q), probs))
    if mode == 3:
        qk_out = probs
    y = ctx.emit(R.matmul(probs, v))
    if rank3:
        b, h, s, d = dim_values(y)
        y = ctx.emit(R.reshape(R.permute_dims(y, [0, 2, 1, 3]), [b, s, h * d]))
    return [y, present_k, present_v, qk_out]
