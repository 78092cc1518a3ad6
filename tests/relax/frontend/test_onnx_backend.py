"""kiln as an ``onnx.backend.base.Backend``: ONNX's own BackendTest runs against it (a sample of
node cases here; benchmarks/onnx_conformance.py runs them all)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
import importlib  # noqa: E402
from unittest import mock  # noqa: E402

import onnx.backend.test  # noqa: E402
import onnx.backend.test.case.node as node_cases  # noqa: E402
import onnx.backend.test.runner  # noqa: E402
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
    "test_triu",  # Trilu, upper=1
    "test_split_variable_parts_1d_opset18",
]

# The ONNX modules that generate the sample's cases (each case's expected outputs are computed
# when its module is imported).
CASE_MODULES = ["add", "relu", "gemm", "conv", "maxpool", "softmax", "layernormalization",
                "reshape", "gather", "reducemean", "reducemax", "slice", "where", "trilu",
                "split"]  # fmt: skip


def _sample_cases(kind: str) -> list:
    """The node cases of `SAMPLE` only; none of the other kinds (on-disk models)."""
    if kind != "node":
        return []
    for name in CASE_MODULES:
        importlib.import_module(f"{node_cases.__name__}.{name}")
    return [case for case in node_cases._NodeTestCases if case.name in SAMPLE]


# NOTE: BackendTest's constructor generates every node case ONNX has (its reference runs, about
# 15 s) and makes a skipped test of each of the ~4,000 not in the sample, in every xdist worker.
# It is handed the sample's cases instead (from their modules only); the same sample runs.
with mock.patch.object(onnx.backend.test.runner, "load_model_tests", _sample_cases):
    _tests = onnx.backend.test.BackendTest(backend.KilnBackend, __name__)
for name in SAMPLE:
    _tests.include(f"{name}_cpu$")
globals().update(_tests.enable_report().test_cases)
_generated = {name for case in _tests.test_cases.values() for name in vars(case)}
_missing = [n for n in SAMPLE if f"{n}_cpu" not in _generated]
assert not _missing, f"sample cases not generated (add their module to CASE_MODULES): {_missing}"


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
