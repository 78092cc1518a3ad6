"""SimplifyInference: a batch norm with constant statistics becomes ``x * s + t`` per channel
(checked against onnxruntime through an ONNX model); one with run-time statistics stays."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln.ir.transform import PassContext
from kiln.relax.transform import SimplifyInference

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from kiln.relax.frontend.onnx import from_onnx  # noqa: E402


def test_batch_norm_with_constant_statistics_becomes_a_per_channel_affine() -> None:
    """No batch_norm call is left to keep the data out of the convolutions' blocked layout; the
    compiled model matches onnxruntime's (and a batch norm whose statistics are inputs stays)."""
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(5)
    c = 6
    stats = {
        "scale": rng.uniform(0.5, 2, c), "bias": rng.standard_normal(c),
        "mean": rng.standard_normal(c), "var": rng.uniform(0.2, 3, c),
    }  # fmt: skip
    inits = [
        helper.make_tensor(k, TensorProto.FLOAT, [c], v.astype("float32")) for k, v in stats.items()
    ]  # noqa: E501
    node = helper.make_node("BatchNormalization", ["x", *stats], ["y"], epsilon=1e-3)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", c, 5, 7])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([node], "bn", [x], [y], initializer=inits)
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    data = data.SerializeToString()
    text = str(SimplifyInference()(from_onnx(data), PassContext()))
    assert "batch_norm" not in text and "R.multiply" in text and "R.add" in text
    a = rng.standard_normal((2, c, 5, 7)).astype("float32")
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": a})[0]
    np.testing.assert_allclose(kiln.compile(data)(a).numpy(), ref, rtol=1e-5, atol=1e-5)
    params = [helper.make_tensor_value_info(k, TensorProto.FLOAT, [c]) for k in stats]
    graph = helper.make_graph([node], "bn", [x, *params], [y])
    runtime = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    kept = SimplifyInference()(from_onnx(runtime.SerializeToString()), PassContext())
    assert "batch_norm" in str(kept)
