"""ONNX activations: each node imports as one relax operator record (``Mish`` is one
``relax.nn.mish`` call, not an ``exp``/``log``/``tanh`` chain) and, compiled with `kiln.compile`,
matches onnxruntime on random and special values (large ``|x|``, values near 0, ``+-inf``, NaN).
The outputs come from one model holding every case's node (compiled once: the suite's time);
each case is still a test of its own.
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


def _node(op: str, attrs: dict[str, Any], y: str = "y") -> tuple[Any, list[Any]]:
    """The node of one case reading ``x`` and writing ``y``, and its initializers."""
    inits, inputs = [], ["x"]
    if op == "PRelu":
        inits, inputs = [numpy_helper.from_array(SLOPE, f"{y}_slope")], ["x", f"{y}_slope"]
    elif op == "Clip":
        bounds = [np.float32(-0.5), np.float32(6.0)]
        inits = [numpy_helper.from_array(b, f"{y}_{n}") for b, n in zip(bounds, ("lo", "hi"))]
        inputs = ["x", f"{y}_lo", f"{y}_hi"]
    return helper.make_node(op, inputs, [y], **attrs), inits


def _graph_model(nodes: list[Any], inits: list[Any], outs: list[str], name: str) -> Any:
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, X.shape)],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, X.shape) for y in outs],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def _model(op: str, attrs: dict[str, Any]) -> Any:
    """The one-node model of a case."""
    node, inits = _node(op, attrs)
    return _graph_model([node], inits, ["y"], op.lower())


def _ops(mod: Any) -> list[str]:
    return [n.op.name for n in pre_order_nodes(mod["main"].body) if isinstance(n, Call)]


@pytest.fixture(scope="module")
def outputs() -> tuple[list[np.ndarray], list[np.ndarray]]:
    """kiln's and onnxruntime's output of every case, from one model holding all the nodes."""
    outs = [f"y{i}" for i in range(len(CASES))]
    made = [_node(op, attrs, y) for (op, attrs, _), y in zip(CASES, outs)]
    model = _graph_model([n for n, _ in made], [i for _, inits in made for i in inits], outs, "all")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = kiln.compile(model)(X)
    return [g.numpy() for g in got], sess.run(None, {"x": X})


@pytest.mark.parametrize("k", range(len(CASES)), ids=[f"{c[0]}{c[1]}" for c in CASES])
def test_one_record_matches_onnxruntime(k: int, outputs: tuple[list, list]) -> None:
    op, attrs, record = CASES[k]
    assert _ops(from_onnx(_model(op, attrs))) == [record]
    got, want = outputs[0][k], outputs[1][k]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{op}: NaN positions")
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, err_msg=op)


def test_attributes_reach_the_record() -> None:
    call = _last_call(from_onnx(_model("Selu", {"alpha": 1.2, "gamma": 0.9})))
    assert (call.attrs["alpha"], call.attrs["gamma"]) == (pytest.approx(1.2), pytest.approx(0.9))
    call = _last_call(from_onnx(_model("Softplus", {})))
    assert call.attrs["threshold"] == float("inf")  # ONNX's Softplus never switches to x


def _last_call(mod: Any) -> Call:
    return [n for n in pre_order_nodes(mod["main"].body) if isinstance(n, Call)][-1]
