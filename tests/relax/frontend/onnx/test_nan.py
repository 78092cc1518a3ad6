"""NaN propagates through kiln's ONNX operators as in onnxruntime and numpy: activations built on
max/min, max/min reductions and ``ArgMax``, max pools, softmax, ``Clip`` and element-wise
``Max``/``Min`` (TIR ``Max``/``Min`` are NaN-propagating; `kiln.codegen.c_expr`'s ``min_max``).
Infinities survive max/min reductions and max pools (their identities are -inf / inf).

Where onnxruntime 1.32 itself depends on where the NaN lies (its vectorized ``ReduceMax``,
``ReduceMin``, ``GlobalMaxPool`` and ``MaxPool`` drop a NaN unless it comes first), numpy is the
reference: the maximum of values holding a NaN is NaN.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from kiln.relax.frontend.onnx import backend  # noqa: E402

NAN = np.float32("nan")


def _with_nans(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Random values with a NaN at the start, in the middle and at the end of some rows (the
    last axis), other rows free of NaN."""
    x = np.random.default_rng(seed).standard_normal(shape).astype("float32")
    rows = x.reshape(-1, shape[-1])
    n = shape[-1]
    rows[0, 0] = rows[1, n // 2] = rows[2, n - 1] = NAN
    rows[3, [1, n - 2]] = NAN
    return x


def _model(nodes: list[Any], inputs: dict[str, np.ndarray], outputs: list[str], inits=()) -> bytes:
    """A graph of ``nodes``; outputs whose name starts with ``arg`` are int64, others float."""

    def out(y: str) -> Any:
        return helper.make_tensor_value_info(
            y, TensorProto.INT64 if y.startswith("arg") else TensorProto.FLOAT, None
        )

    graph = helper.make_graph(
        nodes,
        "nan",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in inputs.items()],
        [out(y) for y in outputs],
        list(inits),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    return model.SerializeToString()


def _kiln(model: bytes, feeds: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    return backend.prepare(model).run(feeds)


def _onnxruntime(model: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)


def _same(got: Any, want: Any, what: str, tol: float = 1e-5) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, what
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{what}: NaN positions")
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True, err_msg=what)


ACTIVATIONS = [
    ("Relu", {}),
    ("LeakyRelu", {"alpha": 0.1}),
    ("HardSigmoid", {}),
    ("HardSwish", {}),
    ("Elu", {}),
    ("Celu", {}),
    ("Selu", {}),
    ("Softplus", {}),
    ("ThresholdedRelu", {}),  # NaN -> 0: onnxruntime's comparison-based definition
]


def test_activations_match_onnxruntime() -> None:
    x = _with_nans((4, 37), 0)
    nodes = [helper.make_node(op, ["x"], [f"y{i}"], **kw) for i, (op, kw) in enumerate(ACTIVATIONS)]
    nodes.append(helper.make_node("PRelu", ["x", "slope"], ["prelu"]))
    outs = [f"y{i}" for i in range(len(ACTIVATIONS))] + ["prelu"]
    slope = numpy_helper.from_array(np.float32([0.25]), "slope")
    model = _model(nodes, {"x": x}, outs, [slope])
    got, want = _kiln(model, {"x": x}), _onnxruntime(model, {"x": x})
    for name, g, w in zip([op for op, _ in ACTIVATIONS] + ["PRelu"], got, want):
        _same(g, w, name)
    assert np.isnan(got[0]).sum() == 5  # Relu keeps every NaN


def test_clip_max_min_match_onnxruntime() -> None:
    x, y = _with_nans((4, 19), 1), _with_nans((4, 19), 2)[::-1].copy()
    lo, hi = (
        numpy_helper.from_array(np.float32(-0.5), "lo"),
        numpy_helper.from_array(np.float32(0.5), "hi"),
    )
    nodes = [
        helper.make_node("Clip", ["x", "lo", "hi"], ["clip"]),
        helper.make_node("Clip", ["x", "", "hi"], ["clip_hi"]),
        helper.make_node("Max", ["x", "y"], ["max"]),
        helper.make_node("Min", ["x", "y"], ["min"]),
        helper.make_node("Max", ["y", "x"], ["max_yx"]),
    ]
    outs = ["clip", "clip_hi", "max", "min", "max_yx"]
    model = _model(nodes, {"x": x, "y": y}, outs, [lo, hi])
    feeds = {"x": x, "y": y}
    for name, g, w in zip(outs, _kiln(model, feeds), _onnxruntime(model, feeds)):
        _same(g, w, name)
    _same(_kiln(model, feeds)[2], np.maximum(x, y), "Max against numpy")


def test_softmax_rows_holding_nan_are_nan() -> None:
    x = _with_nans((6, 40), 3)
    nodes = [
        helper.make_node("Softmax", ["x"], ["sm"], axis=-1),
        helper.make_node("LogSoftmax", ["x"], ["lsm"], axis=-1),
        helper.make_node("Softmax", ["x"], ["sm0"], axis=0),
    ]
    model = _model(nodes, {"x": x}, ["sm", "lsm", "sm0"])
    got, want = _kiln(model, {"x": x}), _onnxruntime(model, {"x": x})
    for name, g, w in zip(["Softmax", "LogSoftmax", "Softmax axis 0"], got, want):
        _same(g, w, name)
    assert np.isnan(got[0][:4]).all() and not np.isnan(got[0][4:]).any()


def _reductions(x: np.ndarray) -> tuple[np.ndarray, ...]:
    """kiln's ReduceMax/ReduceMin over rows, columns and everything, and ArgMax/ArgMin of rows
    (axes as inputs, opset 18 on), with numpy's answers."""
    axes = [numpy_helper.from_array(np.int64([a]), f"axis{a}") for a in (0, 1)]
    nodes = [
        helper.make_node("ReduceMax", ["x", "axis1"], ["max1"], keepdims=0),
        helper.make_node("ReduceMin", ["x", "axis1"], ["min1"], keepdims=0),
        helper.make_node("ReduceMax", ["x", "axis0"], ["max0"], keepdims=1),
        helper.make_node("ReduceMin", ["x"], ["min_all"], keepdims=0),
        helper.make_node("ArgMax", ["x"], ["argmax"], axis=1, keepdims=0),
        helper.make_node("ArgMin", ["x"], ["argmin"], axis=1, keepdims=0),
    ]
    outs = ["max1", "min1", "max0", "min_all", "argmax", "argmin"]
    got = _kiln(_model(nodes, {"x": x}, outs, axes), {"x": x})
    want = [x.max(1), x.min(1), x.max(0, keepdims=True), x.min(), x.argmax(1), x.argmin(1)]
    for name, g, w in zip(outs, got, want):
        _same(g, w, name)
    return got


def test_reductions_and_argmax_match_numpy() -> None:
    _reductions(_with_nans((6, 300), 4))  # rows long enough for every accumulator


def test_extremes_of_infinities_are_infinite() -> None:
    """The maximum of values that are all -inf is -inf (not the lowest finite float), the
    minimum of +inf values +inf; a max pool over -inf gives -inf."""
    x = np.full((4, 300), -np.inf, "float32")
    x[1] = np.inf
    x[2, 7] = 1.0
    x[3, ::2] = np.inf
    got = _reductions(x)
    assert got[0][0] == -np.inf and got[1][1] == np.inf
    inf = np.full((1, 2, 5, 5), -np.inf, "float32")
    pool = dict(kernel_shape=[2, 2], pads=[1, 1, 1, 1])
    nodes = [
        helper.make_node("MaxPool", ["x"], ["pool"], **pool),
        helper.make_node("GlobalMaxPool", ["x"], ["global"]),
    ]
    got = _kiln(_model(nodes, {"x": inf}, ["pool", "global"]), {"x": inf})
    assert (got[0] == -np.inf).all() and got[0].shape == (1, 2, 6, 6)
    assert (got[1] == -np.inf).all()


def test_max_pools_match_numpy() -> None:
    """MaxPool (NCHW, and channel-blocked after a depthwise identity convolution, which reads
    no other channel) and GlobalMaxPool."""
    x = _with_nans((1, 16, 9, 9), 5)
    x[0, 5, 4, 5] = NAN  # in output (2, 2) and (2, 3) only
    eye = numpy_helper.from_array(np.ones((16, 1, 1, 1), "float32"), "eye")
    pool = dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    nodes = [
        helper.make_node("MaxPool", ["x"], ["pool"], **pool),
        helper.make_node("Conv", ["x", "eye"], ["c"], group=16),
        helper.make_node("MaxPool", ["c"], ["pool_blocked"], **pool),
        helper.make_node("GlobalMaxPool", ["x"], ["global"]),
    ]
    outs = ["pool", "pool_blocked", "global"]
    got = _kiln(_model(nodes, {"x": x}, outs, [eye]), {"x": x})
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    want = windows[:, :, ::2, ::2].max(axis=(4, 5))
    _same(got[0], want, "MaxPool")
    _same(got[1], want, "MaxPool blocked")
    _same(got[2], x.max(axis=(2, 3), keepdims=True), "GlobalMaxPool")
    assert np.isnan(got[0][0, 5, 2, 2:4]).all() and not np.isnan(got[0][0, 5, 3:]).any()
