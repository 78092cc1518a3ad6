"""ONNX activations: each node imports as one relax operator record (``Mish`` is one
``relax.nn.mish`` call, not an ``exp``/``log``/``tanh`` chain) and, compiled with `kiln.compile`,
matches onnxruntime on random and special values (large ``|x|``, values near 0, ``+-inf``, NaN).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import kiln  # noqa: E402
from kiln.ir.visitor import pre_order_nodes  # noqa: E402
from kiln.relax.expr import Call  # noqa: E402
from kiln.relax.frontend.onnx import from_onnx  # noqa: E402
from tests.relax.op.cases_activation import SPECIAL  # noqa: E402

OPSET = 24
RNG = np.random.default_rng(5)
X = np.concatenate([np.float32(SPECIAL), RNG.uniform(-8, 8, 64 - len(SPECIAL))]).astype("float32")
X = X.reshape(1, 4, 2, 8)
SLOPE = np.float32([[[0.1]], [[0.5]], [[-0.3]], [[2.0]]])

CASES = [
    ("Softplus", {}, "relax.nn.softplus"),
    ("Softsign", {}, "relax.nn.softsign"),
    ("Mish", {}, "relax.nn.mish"),
    ("HardSwish", {}, "relax.nn.hardswish"),
    ("HardSigmoid", {}, "relax.nn.hardsigmoid"),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, "relax.nn.hardsigmoid"),
    ("LeakyRelu", {"alpha": 0.2}, "relax.nn.leakyrelu"),
    ("Elu", {"alpha": 0.7}, "relax.nn.elu"),
    ("Selu", {}, "relax.nn.selu"),
    ("Selu", {"alpha": 1.2, "gamma": 0.9}, "relax.nn.selu"),
    ("Celu", {"alpha": 1.5}, "relax.nn.celu"),
    ("ThresholdedRelu", {"alpha": 0.5}, "relax.nn.thresholded_relu"),
    ("Shrink", {"lambd": 1.0, "bias": 0.2}, "relax.nn.shrink"),
    ("Swish", {}, "relax.nn.silu"),
    ("Swish", {"alpha": 1.7}, "relax.nn.swish"),
    ("Gelu", {}, "relax.nn.gelu"),
    ("Gelu", {"approximate": "tanh"}, "relax.nn.gelu_tanh"),
    ("PRelu", {}, "relax.nn.prelu"),
    ("Clip", {}, "relax.clip"),
]


def _model(op: str, attrs: dict[str, Any]) -> Any:
    inits, inputs = [], ["x"]
    if op == "PRelu":
        inits, inputs = [numpy_helper.from_array(SLOPE, "slope")], ["x", "slope"]
    elif op == "Clip":
        bounds = [np.float32(-0.5), np.float32(6.0)]
        inits = [numpy_helper.from_array(b, n) for b, n in zip(bounds, ("lo", "hi"))]
        inputs = ["x", "lo", "hi"]
    graph = helper.make_graph(
        [helper.make_node(op, inputs, ["y"], **attrs)],
        op.lower(),
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, X.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, X.shape)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def _ops(mod: Any) -> list[str]:
    return [n.op.name for n in pre_order_nodes(mod["main"].body) if isinstance(n, Call)]


@pytest.mark.parametrize(("op", "attrs", "record"), CASES, ids=[f"{c[0]}{c[1]}" for c in CASES])
def test_one_record_matches_onnxruntime(op: str, attrs: dict[str, Any], record: str) -> None:
    model = _model(op, attrs)
    assert _ops(from_onnx(model)) == [record]
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = want.run(None, {"x": X})
    got = kiln.compile(model)(X).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{op}: NaN positions")
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, err_msg=op)


def test_attributes_reach_the_record() -> None:
    call = _last_call(from_onnx(_model("Selu", {"alpha": 1.2, "gamma": 0.9})))
    assert (call.attrs["alpha"], call.attrs["gamma"]) == (pytest.approx(1.2), pytest.approx(0.9))
    call = _last_call(from_onnx(_model("Softplus", {})))
    assert call.attrs["threshold"] == float("inf")  # ONNX's Softplus never switches to x


def _last_call(mod: Any) -> Call:
    return [n for n in pre_order_nodes(mod["main"].body) if isinstance(n, Call)][-1]
