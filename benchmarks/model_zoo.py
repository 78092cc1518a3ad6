"""The models of `bench_models.py`, built with torch: one constructor and one input set each.

Every model is made with a fixed seed (batch norms get non-trivial statistics), so a worker
process that rebuilds it from its name and loads the saved state dict has the same weights as the
ONNX file exported from it. Inputs are named (``x``, ``keep``, ``ids``) and the ONNX files keep
those names, so one ``.npz`` of inputs feeds kiln, onnxruntime and torch alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from kiln.examples.models import torch_nets
from kiln.examples.models.torch_nets import Attention, Block

nn = torch.nn
F = torch.nn.functional


class MLP(nn.Module):
    """784 -> 1024 -> 1024 -> 10 with ReLU, GELU and a softmax."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2, self.fc3 = (
            nn.Linear(784, 1024),
            nn.Linear(1024, 1024),
            nn.Linear(1024, 10),
        )

    def forward(self, x: Any) -> Any:
        return F.softmax(self.fc3(F.gelu(self.fc2(F.relu(self.fc1(x))))), dim=-1)


class SmallCNN(nn.Module):
    """conv/relu/max pool, a depthwise conv with batch norm and ReLU6, a 1x1 conv, global
    average pooling and a classifier (MobileNet-style pieces) at 3x64x64."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(3, 32, 3, padding=1)
        self.dw = nn.Conv2d(32, 32, 3, padding=1, groups=32, bias=False)
        self.bn = nn.BatchNorm2d(32)
        self.c2 = nn.Conv2d(32, 64, 1)
        self.c3 = nn.Conv2d(64, 64, 3, stride=2, padding=1)
        self.fc = nn.Linear(64, 10)

    def forward(self, x: Any) -> Any:
        h = F.max_pool2d(F.relu(self.c1(x)), 2)
        h = F.relu6(self.bn(self.dw(h)))
        h = F.relu(self.c3(F.relu(self.c2(h))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(h, 1), 1))


class ResNet18(nn.Module):
    """ResNet-18 (widths 64..512, two basic blocks per stage, 1000 classes)."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))  # fmt: skip
        blocks, cin = [], 64
        for k, w in enumerate((64, 128, 256, 512)):
            for b in range(2):
                blocks.append(Block(cin, w, 2 if k > 0 and b == 0 else 1))
                cin = w
        self.stages = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, 1000)

    def forward(self, x: Any) -> Any:
        h = self.stages(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(h, 1), 1))


class Encoder(nn.Module):
    """A post-norm transformer encoder layer (d 256, 4 heads, FF 1024) with a padding mask."""

    def __init__(self, d: int = 256, heads: int = 4) -> None:
        super().__init__()
        self.att = Attention(d, heads)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: Any, keep: Any) -> Any:
        x = self.ln1(x + self.att(x, (keep == 0)[:, None, None, :]))
        return self.ln2(x + self.ff(x))


def Decoder() -> nn.Module:  # noqa: N802 - a model constructor, named like the class it makes
    """A decoder-only language model: embeddings, 2 causal pre-norm blocks (d 256, 4 heads),
    vocabulary 1000."""
    return torch_nets.Decoder(vocab=1000, d=256, heads=4, layers=2, max_len=256)


def _randn(*shape: int) -> np.ndarray:
    return np.random.default_rng(0).standard_normal(shape).astype("float32")


def _encoder_inputs() -> dict[str, np.ndarray]:
    keep = np.ones((1, 128), "int64")
    keep[0, 100:] = 0  # padding at the end
    return {"x": _randn(1, 128, 256), "keep": keep}


MODELS: dict[str, tuple[Callable[[], nn.Module], Callable[[], dict[str, np.ndarray]]]] = {
    "mlp-b1": (MLP, lambda: {"x": _randn(1, 784)}),
    "mlp-b64": (MLP, lambda: {"x": _randn(64, 784)}),
    "cnn": (SmallCNN, lambda: {"x": _randn(1, 3, 64, 64)}),
    "resnet18": (ResNet18, lambda: {"x": _randn(1, 3, 224, 224)}),
    "encoder": (Encoder, _encoder_inputs),
    "decoder": (Decoder, lambda: {"ids": np.random.default_rng(0).integers(0, 1000, (1, 64))}),
}
"""name -> (module constructor, its inputs by name)."""

DESCRIPTIONS = {
    "mlp-b1": "MLP 784-1024-1024-10, batch 1",
    "mlp-b64": "MLP 784-1024-1024-10, batch 64",
    "cnn": "small CNN 3x64x64",
    "resnet18": "ResNet-18 224x224",
    "encoder": "encoder layer 128x256",
    "decoder": "decoder-only LM, 2 layers, seq 64",
}


def build(name: str) -> nn.Module:
    """Model ``name`` with its seeded weights, in eval mode."""
    make, _ = MODELS[name]
    torch.manual_seed(sum(map(ord, name)))
    return seed_statistics(make().eval())


def seed_statistics(module: nn.Module) -> nn.Module:
    """``module`` with its 2-d batch norms' running statistics drawn from a fixed seed (means
    ~ N(0, 0.01), variances in [0.5, 1.5]) instead of a fresh module's 0 and 1, which make
    every batch norm all but an identity."""
    gen = torch.Generator().manual_seed(1)
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
    return module


def inputs(name: str) -> dict[str, np.ndarray]:
    return MODELS[name][1]()


def export_onnx(module: nn.Module, feeds: dict[str, np.ndarray]) -> bytes:
    """``module`` as ONNX (opset 17, the TorchScript exporter), inputs named as in ``feeds``."""
    args = [torch.from_numpy(v) for v in feeds.values()]
    return torch_nets.export_onnx(module, args, list(feeds))
