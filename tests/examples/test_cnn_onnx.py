"""The demo's bundled ONNX CNN: a valid ONNX model that kiln compiles from its file and that
matches onnxruntime at two batch sizes (its batch dimension is symbolic)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kiln

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def test_bundled_cnn_compiles_from_its_file_and_matches_onnxruntime(tmp_path: Path) -> None:
    from kiln.examples.models.cnn_onnx import cnn_onnx_model

    model_proto = cnn_onnx_model()
    onnx.checker.check_model(model_proto, full_check=True)
    path = tmp_path / "cnn.onnx"
    onnx.save(model_proto, path)
    model = kiln.compile(str(path))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for batch in (1, 3):
        image = rng.standard_normal((batch, 3, 32, 32)).astype("float32")
        want = session.run(None, {"image": image})[0]
        got = model(image=image).numpy()
        assert got.shape == (batch, 10)
        np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)
