"""kiln as an ``onnx.backend.base.Backend``: ONNX's own BackendTest runs against it (a sample of
node cases here; benchmarks/onnx_conformance.py runs them all)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
import onnx.backend.test  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

from kiln.relax.frontend.onnx import backend  # noqa: E402

SAMPLE = [
    "test_add_bcast",
    "test_relu",
    "test_gemm_all_attributes",
    "test_conv_with_strides_padding",
    "test_maxpool_2d_pads",
    "test_softmax_axis_1",
    "test_layer_normalization_4d_axis1",
    "test_reshape_negative_dim",  # the shape is an input: bound when the case runs
    "test_gather_0",
    "test_reduce_mean_keepdims_example",
    "test_reduce_max_empty_set",  # the identity, -inf: the operator refuses no elements
    "test_reshape_allowzero_reordered",  # an empty tensor
    "test_slice_neg_steps",
    "test_where_example",
    "test_trilu_upper",
    "test_split_variable_parts_1d_opset18",
]

_tests = onnx.backend.test.BackendTest(backend.KilnBackend, __name__)
for name in SAMPLE:
    _tests.include(f"{name}_cpu$")
globals().update(_tests.enable_report().test_cases)


def test_supports_device() -> None:
    assert backend.supports_device("CPU") and not backend.supports_device("CUDA")


def test_run_node() -> None:
    node = helper.make_node("Mul", ["a", "b"], ["c"])
    a, b = np.arange(6, dtype="float32").reshape(2, 3), np.float32([1, 2, 3])
    (c,) = backend.run_node(node, [a, b])
    np.testing.assert_allclose(c, a * b)


def test_run_model_by_name() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    graph = helper.make_graph([helper.make_node("Neg", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    rep = backend.prepare(model)
    np.testing.assert_allclose(rep.run({"x": np.float32([1, -2])})[0], [-1, 2])
