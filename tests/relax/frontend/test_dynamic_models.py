"""Dynamic-shape exports of real architectures import, compile and match onnxruntime at two
sizes of each symbolic dim, one of them 1 and one not a multiple of any vector width.

The models (tests/relax/frontend/dynamic_models, written by benchmarks/dynamic_models.py) are
transformers, timm and torchvision architectures with small configs, exported with
``dynamic_axes``: batch and sequence for the text models, batch for the image models. Their
float weights are seeded random values filled in here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kiln
from tests.relax.frontend.dynamic_models.random_weights import fill

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

MODELS = Path(__file__).parent / "dynamic_models"
TEXT = ["bert", "distilbert", "clip_text", "gpt2", "llama", "t5_encoder"]
IMAGE = {"vit": 32, "mobilevit": 64, "swin": 56, "resnet50": 32}


def load(name: str) -> object:
    proto = onnx.load(str(MODELS / f"{name}.onnx"))
    fill(proto, seed=len(name))
    return proto


def check(proto: object, inputs: list[np.ndarray]) -> None:
    model = kiln.compile(proto)
    session = ort.InferenceSession(proto.SerializeToString())
    name = session.get_inputs()[0].name
    for x in inputs:
        want = session.run(None, {name: x})[0]
        got = model(x).numpy()
        assert got.shape == want.shape, (x.shape, got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("name", TEXT)
def test_text_model_with_symbolic_batch_and_sequence(name: str) -> None:
    rng = np.random.default_rng(0)
    sizes = [(1, 1), (3, 11)]
    check(load(name), [rng.integers(0, 100, s).astype(np.int64) for s in sizes])


@pytest.mark.parametrize("name", sorted(IMAGE))
def test_image_model_with_symbolic_batch(name: str) -> None:
    rng = np.random.default_rng(0)
    side = IMAGE[name]
    check(load(name), [rng.standard_normal((n, 3, side, side)).astype("float32") for n in (1, 3)])
