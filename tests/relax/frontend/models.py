"""Small models for the frontend tests, built in the suite: torch modules exported to ONNX with
the TorchScript exporter (``dynamo=False``), and a helper comparing kiln with onnxruntime."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
nn = torch.nn
F = torch.nn.functional

from kiln.examples.models.torch_nets import Attention, Block, export_onnx  # noqa: E402, F401
from kiln.examples.models.torch_nets import Decoder as TorchDecoder  # noqa: E402

TOL = 2e-3


def ort_run(model: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def outputs(value: Any) -> list[np.ndarray]:
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in outputs(v)]
    return [value.numpy()]


def check_vs_ort(model: bytes, feed_sets: Sequence[dict[str, np.ndarray]]) -> None:
    """kiln (both exec modes) matches onnxruntime on every feed set (rtol/atol 2e-3)."""
    import kiln

    for mode in ("compiled", "bytecode"):
        compiled = kiln.compile(model, exec_mode=mode)
        for feeds in feed_sets:
            want = ort_run(model, feeds)
            got = outputs(compiled(**feeds))
            assert len(got) == len(want)
            for g, w in zip(got, want):
                assert g.shape == w.shape, (mode, g.shape, w.shape)
                np.testing.assert_allclose(g, w, rtol=TOL, atol=TOL, err_msg=mode)


# -- the model families ------------------------------------------------------------------------
class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(32, 64), nn.Linear(64, 64), nn.Linear(64, 10)

    def forward(self, x: Any) -> Any:
        h = F.relu(self.fc1(x))
        h = F.gelu(self.fc2(h))
        return F.softmax(self.fc3(h), dim=-1)


class CNN(nn.Module):
    """conv / relu / max pool, a depthwise conv with ReLU6 and batch norm, average pooling."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 16, 1)
        self.fc = nn.Linear(16, 5)

    def forward(self, x: Any) -> Any:
        h = F.max_pool2d(F.relu(self.c1(x)), 2)
        h = F.relu6(self.bn(self.dw(h)))
        h = F.avg_pool2d(self.c2(h), 2)
        h = F.adaptive_avg_pool2d(h, 1)
        return self.fc(torch.flatten(h, 1))


class ResNet(nn.Module):
    """ResNet-style: a stem, ``layers`` stages of basic blocks, global pooling, a classifier
    (``widths=(64, 128, 256, 512), blocks=2`` is ResNet-18)."""

    def __init__(self, widths: Sequence[int] = (8, 16), blocks: int = 1, classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 7, 2, 3, bias=False),
                                  nn.BatchNorm2d(widths[0]), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))  # fmt: skip
        stages, cin = [], widths[0]
        for k, w in enumerate(widths):
            for b in range(blocks):
                stages.append(Block(cin, w, 2 if k > 0 and b == 0 else 1))
                cin = w
        self.stages = nn.Sequential(*stages)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x: Any) -> Any:
        h = self.stages(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(h, 1), 1))


class EncoderLayer(nn.Module):
    """A post-norm transformer encoder layer with a padding mask input (0 = padding)."""

    def __init__(self, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.att = Attention(d, heads)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 64), nn.GELU(), nn.Linear(64, d))

    def forward(self, x: Any, keep: Any) -> Any:
        mask = (keep == 0)[:, None, None, :]
        x = self.ln1(x + self.att(x, mask))
        return self.ln2(x + self.ff(x))


def Decoder() -> Any:  # noqa: N802 - a model constructor, named like the class it makes
    """A small decoder-only language model (vocabulary 64, d 32, 4 heads, 2 blocks, positions up
    to 128)."""
    return TorchDecoder(vocab=64, d=32, heads=4, layers=2, max_len=128)


def randn(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def init_batch_norms(module: Any, seed: int = 0) -> Any:
    """Give every batch norm non-trivial statistics (so folding mistakes show)."""
    gen = torch.Generator().manual_seed(seed)
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
    return module
