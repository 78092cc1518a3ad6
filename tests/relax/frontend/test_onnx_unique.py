"""ONNX Unique over all elements (`kiln.topi.sort.unique_kernel`): values sorted or in the order
they first occur, first indices, inverse indices and counts against onnxruntime, for several
inputs of one compiled model (the number of distinct values is a dim read when it runs); NaNs
group as numpy does; Unique along an axis is a clear import error."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln.errors import FrontendError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
h, T = onnx.helper, onnx.TensorProto


def _model(shape: tuple[int, ...], sorted_: int, dt: int = T.FLOAT, **attrs):
    node = h.make_node("Unique", ["x"], ["y", "i", "inv", "c"], sorted=sorted_, **attrs)
    kinds = (("y", dt), ("i", T.INT64), ("inv", T.INT64), ("c", T.INT64))
    outs = [h.make_tensor_value_info(n, t, None) for n, t in kinds]
    graph = h.make_graph([node], "g", [h.make_tensor_value_info("x", dt, shape)], outs)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])


@pytest.mark.parametrize("sorted_", [1, 0], ids=["sorted", "first-occurrence"])
@pytest.mark.parametrize("shape", [(12,), (3, 4), (1,)])
def test_all_four_outputs_match_onnxruntime(shape: tuple[int, ...], sorted_: int) -> None:
    model = _model(shape, sorted_)
    compiled = kiln.compile(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for low, high in ((-3, 3), (0, 1), (-50, 50)):  # several, one or all distinct values
        x = rng.integers(low, high, shape).astype("float32")
        for got, want in zip(compiled(x), sess.run(None, {"x": x})):
            np.testing.assert_array_equal(np.asarray(got), want, err_msg=str(x))


def test_integers_and_nan_grouped_as_numpy() -> None:
    x = np.array([5, 1, 5, 7, 1, 1], np.int64)
    y, idx, inv, counts = (np.asarray(a) for a in kiln.compile(_model((6,), 1, T.INT64))(x))
    want = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    for got, w in zip((y, idx, inv, counts), want):
        np.testing.assert_array_equal(got, w)
    f = np.array([2.0, np.nan, -1.0, np.nan, 2.0], np.float32)
    y, _, inv, counts = (np.asarray(a) for a in kiln.compile(_model((5,), 1))(f))
    np.testing.assert_array_equal(y, [-1.0, 2.0, np.nan])
    np.testing.assert_array_equal(inv, [1, 2, 0, 2, 1])
    np.testing.assert_array_equal(counts, [1, 2, 2])


def test_an_axis_is_a_clear_error() -> None:
    with pytest.raises(FrontendError, match="Unique along an axis is not supported yet"):
        kiln.compile(_model((3, 4), 1, axis=0))
