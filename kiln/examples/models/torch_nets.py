"""torch building blocks shared by the frontend tests and `benchmarks/bench_models.py` (needs
torch, ``kiln[torch]``): a ResNet basic block, multi-head self-attention with a mask, and the
ONNX export both use (the TorchScript exporter, ``dynamo=False``)."""

from __future__ import annotations

import io
import warnings
from collections.abc import Sequence
from typing import Any

import torch

nn = torch.nn
F = torch.nn.functional


class Block(nn.Module):
    """A ResNet basic block (two 3x3 convs, batch norm, a projection when the shape changes)."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                       nn.BatchNorm2d(cout))  # fmt: skip

    def forward(self, x: Any) -> Any:
        h = F.relu(self.b1(self.c1(x)))
        h = self.b2(self.c2(h))
        return F.relu(h + (x if self.short is None else self.short(x)))


class Attention(nn.Module):
    """Multi-head self-attention; ``mask`` is True where a score is masked out."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads, self.d = heads, d
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x: Any, mask: Any) -> Any:
        b, t, _ = x.shape
        q, k, v = self.qkv(x).split(self.d, dim=-1)
        q, k, v = (z.reshape(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
        att = q @ k.transpose(-1, -2) / (self.d // self.heads) ** 0.5
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        return self.out((att @ v).transpose(1, 2).reshape(b, t, self.d))


class Decoder(nn.Module):
    """A decoder-only language model: token and position embeddings (positions up to
    ``max_len``), ``layers`` causal pre-norm blocks, a linear head."""

    def __init__(self, vocab: int, d: int, heads: int, layers: int, max_len: int) -> None:
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
        self.blocks = nn.ModuleList(nn.ModuleDict({
            "ln1": nn.LayerNorm(d), "att": Attention(d, heads), "ln2": nn.LayerNorm(d),
            "ff": nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)),
        }) for _ in range(layers))  # fmt: skip
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids: Any) -> Any:
        t = ids.shape[1]
        h = self.tok(ids) + self.pos(torch.arange(t))
        causal = torch.triu(torch.ones(t, t), diagonal=1).bool()
        for blk in self.blocks:
            h = h + blk["att"](blk["ln1"](h), causal)
            h = h + blk["ff"](blk["ln2"](h))
        return self.head(self.ln(h))


def export_onnx(
    module: Any,
    args: Sequence[Any],
    names: Sequence[str],
    dynamic: dict[str, dict[int, str]] | None = None,
    opset: int = 17,
) -> bytes:
    """``module`` as ONNX bytes (inputs named ``names``, output ``out``; ``dynamic``: symbolic
    axes per input name)."""
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module.eval(),
            tuple(args),
            buf,
            dynamo=False,
            input_names=list(names),
            output_names=["out"],
            dynamic_axes=dynamic or {},
            opset_version=opset,
        )
    return buf.getvalue()
