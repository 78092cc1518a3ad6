"""ONNX TopK (`kiln.topi.sort.topk_kernel`) against onnxruntime: values and indices on every
axis, largest and smallest, ties (the lower index first), NaN and infinities, integers, a k
computed from data (a dim read when the model runs) and the errors for a k out of range."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln.errors import FrontendError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
h, T = onnx.helper, onnx.TensorProto


def _model(shape: tuple[int, ...], axis: int, k: int | None, largest: int, dt: int = T.FLOAT):
    """TopK of ``x``; ``k`` an initializer, or a graph input when None."""
    node = h.make_node("TopK", ["x", "k"], ["v", "i"], axis=axis, largest=largest)
    inputs = [h.make_tensor_value_info("x", dt, shape)]
    inits = []
    if k is None:
        inputs.append(h.make_tensor_value_info("k", T.INT64, [1]))
    else:
        inits.append(onnx.numpy_helper.from_array(np.array([k], np.int64), "k"))
    outs = [h.make_tensor_value_info("v", dt, None), h.make_tensor_value_info("i", T.INT64, None)]
    graph = h.make_graph([node], "g", inputs, outs, inits)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])


def _check(model, feeds: list[dict[str, np.ndarray]]) -> None:
    compiled = kiln.compile(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for feed in feeds:
        got = compiled(*feed.values())
        for g, w in zip(got, sess.run(None, feed)):
            np.testing.assert_array_equal(np.asarray(g), w, err_msg=str(feed))


@pytest.mark.parametrize(
    ("shape", "axis", "k", "largest"),
    [((3, 10), -1, 4, 1), ((3, 10), 1, 10, 0), ((4, 5, 6), 1, 3, 1), ((4, 5, 6), 0, 2, 0)],
)
def test_values_and_indices_match_onnxruntime_with_ties(shape, axis, k, largest) -> None:
    x = np.random.default_rng(0).integers(-4, 4, shape).astype("float32")  # many ties
    _check(_model(shape, axis, k, largest), [{"x": x}])


@pytest.mark.parametrize("largest", [1, 0])
def test_nan_and_infinities_order_as_onnxruntime(largest: int) -> None:
    x = np.array([[1, np.nan, 3, -np.inf, np.nan, 2, np.inf, -0.0]], np.float32)
    _check(_model((1, 8), -1, 8, largest), [{"x": x}])


def test_integers() -> None:
    x = np.array([[3, 1, 3, 2, 9, 3], [0, -1, -1, 5, 5, 0]], np.int32)
    _check(_model((2, 6), 1, 3, 1, T.INT32), [{"x": x}])


def test_k_from_data_sizes_the_result_when_the_model_runs() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 10)).astype("float32")
    feeds = [{"x": x, "k": np.array([k])} for k in (0, 1, 7, 10)]
    _check(_model((3, 10), -1, None, 1), feeds)
    compiled = kiln.compile(_model((3, 10), -1, None, 1))
    with pytest.raises(ValueError, match=r"TopK's k is 11; it must lie in 0\.\.10 \(axis 1\)"):
        compiled(x, np.array([11]))


def test_a_constant_k_out_of_range_is_an_import_error() -> None:
    with pytest.raises(FrontendError, match=r"TopK's k is 11; it must lie in 0\.\.10"):
        kiln.compile(_model((3, 10), -1, 11, 1))
