"""Symbolic dims through ONNX shape subgraphs: dims are shape variables, and operands whose
dims must agree under broadcasting (``min(seq, 8)`` of a sliced constant against ``seq``) are
unified, with a run-time check instead of a lost shape."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln.relax.frontend.onnx import from_onnx
from kiln.tir.expr import SizeVar

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
h, T = onnx.helper, onnx.TensorProto


def position_slice_model(positions: int = 8) -> onnx.ModelProto:
    """Hugging Face's ``position_ids[:, :seq_len]``: a Slice of a constant whose end is
    ``Shape(x)[1]``, added to the input."""
    tensors = {
        "pos": np.arange(positions, dtype=np.int64)[None],
        "zero": np.array([0]),
        "one": np.array([1]),
    }
    nodes = [
        h.make_node("Shape", ["x"], ["s"], start=1, end=2),
        h.make_node("Slice", ["pos", "zero", "s", "one"], ["p"]),
        h.make_node("Cast", ["p"], ["pf"], to=T.FLOAT),
        h.make_node("Add", ["pf", "x"], ["y"]),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, ["batch", "seq"])],
        [h.make_tensor_value_info("y", T.FLOAT, ["batch", "seq"])],
        [onnx.numpy_helper.from_array(v, k) for k, v in tensors.items()],
    )
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def test_model_dims_are_shape_variables() -> None:
    main = from_onnx(position_slice_model())["main"]
    dims = main.params[0].struct_info_.dims
    assert all(isinstance(d, SizeVar) for d in dims), dims


def test_a_slice_up_to_a_shape_keeps_the_sequence_symbolic() -> None:
    mod = from_onnx(position_slice_model())
    out = mod["main"].body.body  # the returned variable
    assert [str(d) for d in out.struct_info_.dims] == ["batch", "seq"]
    model = kiln.compile(position_slice_model())
    session = ort.InferenceSession(position_slice_model().SerializeToString())
    for shape in [(2, 5), (1, 8), (3, 1)]:
        x = np.random.default_rng(sum(shape)).standard_normal(shape).astype("float32")
        np.testing.assert_array_equal(model(x).numpy(), session.run(None, {"x": x})[0])


def test_a_sequence_longer_than_the_sliced_constant_is_a_clear_error() -> None:
    model = kiln.compile(position_slice_model(8))
    with pytest.raises(ValueError, match=r"expected 9, got 8"):
        model(np.ones((2, 9), "float32"))
