"""ONNX GatherND (relax.gather_nd) against onnxruntime: batch dims, index
tuples shorter than the data's rank, negative indices, and a symbolic batch."""

from __future__ import annotations

import numpy as np
import pytest

import kiln

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
h, T = onnx.helper, onnx.TensorProto

CASES = [
    ((2, 3, 4), (5, 2), 0),
    ((2, 3, 4), (2, 1), 1),
    ((2, 3, 4, 5), (2, 3, 2), 1),
    ((4, 6), (3, 2, 1), 0),
    ((3, 4, 5), (3, 2, 2), 1),
    ((2, 3, 4), (2, 3, 1), 2),
]


def gather_nd_model(data: tuple, indices: tuple, batch_dims: int) -> onnx.ModelProto:
    node = h.make_node("GatherND", ["x", "i"], ["y"], batch_dims=batch_dims)
    x = h.make_tensor_value_info("x", T.FLOAT, data)
    i = h.make_tensor_value_info("i", T.INT64, indices)
    g = h.make_graph([node], "g", [x, i], [h.make_tensor_value_info("y", T.FLOAT, None)])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 13)])


def random_indices(rng: np.random.Generator, data: tuple, indices: tuple, b: int) -> np.ndarray:
    extents = data[b : b + indices[-1]]
    return np.stack([rng.integers(-n, n, indices[:-1]) for n in extents], -1).astype(np.int64)


@pytest.mark.parametrize("data,indices,batch_dims", CASES)
def test_gather_nd_matches_onnxruntime(data: tuple, indices: tuple, batch_dims: int) -> None:
    rng = np.random.default_rng(len(data) * 10 + batch_dims)
    x = rng.standard_normal(data).astype("float32")
    idx = random_indices(rng, data, indices, batch_dims)
    model = gather_nd_model(data, indices, batch_dims)
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x, "i": idx})[0]
    got = kiln.compile(model)(x, idx).numpy()
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_gather_nd_over_a_symbolic_batch() -> None:
    model = gather_nd_model(("n", 3, 4), ("n", 2, 1), 1)
    compiled = kiln.compile(model)
    session = ort.InferenceSession(model.SerializeToString())
    rng = np.random.default_rng(7)
    for n in (1, 5):
        x = rng.standard_normal((n, 3, 4)).astype("float32")
        idx = random_indices(rng, (n, 3, 4), (n, 2, 1), 1)
        want = session.run(None, {"x": x, "i": idx})[0]
        np.testing.assert_array_equal(compiled(x, idx).numpy(), want)
