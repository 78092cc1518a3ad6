"""One constant folder: the ONNX importer evaluates only what converters need to know to build
shapes (`values.fold`); float math on weights (Transpose, Mul, DequantizeLinear) is imported as
graph calls and folded once by `FoldConstant`, and the compiled model matches onnxruntime."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import kiln  # noqa: E402
from kiln.driver.pipeline import host_kernel  # noqa: E402
from kiln.ir.visitor import pre_order_nodes  # noqa: E402
from kiln.relax.expr import Call, Function  # noqa: E402
from kiln.relax.frontend.onnx import from_onnx  # noqa: E402
from kiln.relax.frontend.onnx import values as V  # noqa: E402
from kiln.relax.transform import FoldConstant, Normalize  # noqa: E402

RNG = np.random.default_rng(11)


def _model(nodes: list[Any], x_shape: list[int], inits: dict[str, np.ndarray]) -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    tensors = [numpy_helper.from_array(v, k) for k, v in inits.items()]
    graph = helper.make_graph(nodes, "g", [x], [y], initializer=tensors)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model.SerializeToString()


def _ops(mod: Any) -> list[str]:
    main = mod["main"]
    assert isinstance(main, Function)
    return [n.op.name for n in pre_order_nodes(main.body) if isinstance(n, Call)]


def _matches_ort(model: bytes, x: np.ndarray) -> None:
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {"x": x})
    got = kiln.compile(model)(x).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _weight_chain_model() -> bytes:
    """y = Relu(x @ W) @ V with W = DequantizeLinear(Wq) * Transpose(A) (per-axis scales) and
    V = Transpose(B) * g: every weight is float math on initializers."""
    nodes = [
        helper.make_node("DequantizeLinear", ["wq", "scale", "zp"], ["wd"], axis=1),
        helper.make_node("Transpose", ["a"], ["at"], perm=[1, 0]),
        helper.make_node("Mul", ["wd", "at"], ["w"]),
        helper.make_node("Transpose", ["b"], ["bt"], perm=[1, 0]),
        helper.make_node("Mul", ["bt", "g"], ["v"]),
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Relu", ["h"], ["hr"]),
        helper.make_node("MatMul", ["hr", "v"], ["y"]),
    ]
    inits = {
        "wq": RNG.integers(-128, 128, (16, 12)).astype("int8"),
        "scale": RNG.uniform(0.01, 0.05, 12).astype("float32"),
        "zp": RNG.integers(-4, 4, 12).astype("int8"),
        "a": RNG.standard_normal((12, 16)).astype("float32"),
        "b": RNG.standard_normal((5, 12)).astype("float32"),
        "g": RNG.standard_normal(5).astype("float32"),
    }
    return _model(nodes, [3, 16], inits)


def test_weight_math_is_graph_calls_folded_once_by_fold_constant() -> None:
    model = _weight_chain_model()
    mod = from_onnx(model)
    imported = _ops(mod)
    for op in ("relax.astype", "relax.permute_dims", "relax.multiply", "relax.subtract"):
        assert op in imported, op  # the importer left the float math to the graph
    folded = FoldConstant(build=host_kernel)(Normalize()(mod))
    assert sorted(_ops(folded)) == ["relax.matmul", "relax.matmul", "relax.nn.relu"]
    # folded with numpy alone, too: the arithmetic of a DequantizeLinear is exact there
    assert FoldConstant()(Normalize()(mod)).script() == folded.script()
    _matches_ort(model, RNG.standard_normal((3, 16)).astype("float32"))


def test_a_reshape_to_shape_gather_concat_gets_a_static_shape() -> None:
    """Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])): evaluated at import."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus1"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    inits = {
        "zero": np.array(0, "int64"),
        "axes": np.array([0], "int64"),
        "minus1": np.array([-1], "int64"),
    }
    model = _model(nodes, [2, 3, 4], inits)
    mod = from_onnx(model)
    assert _ops(mod) == ["relax.reshape"]
    assert "R.shape([2, 12])" in mod.script()
    _matches_ort(model, RNG.standard_normal((2, 3, 4)).astype("float32"))


def test_float_scales_read_by_resize_are_evaluated_at_import() -> None:
    """Resize's scales are read as values: their float Mul of initializers is evaluated at
    import (what they are computed from is read as a value too)."""
    nodes = [
        helper.make_node("Mul", ["half", "four"], ["scales"]),
        helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest"),
    ]
    inits = {"half": np.float32([1, 1, 1, 0.5]), "four": np.float32([1, 1, 4, 4])}
    model = _model(nodes, [1, 2, 3, 4], inits)
    assert "relax.multiply" not in _ops(from_onnx(model))
    _matches_ort(model, RNG.standard_normal((1, 2, 3, 4)).astype("float32"))


def test_small_integer_math_folds_at_import_and_float_math_does_not() -> None:
    nodes = [
        helper.make_node("Add", ["i", "one"], ["j"]),  # int64 indices: evaluated at import
        helper.make_node("Gather", ["x", "j"], ["xg"], axis=1),
        helper.make_node("Add", ["p", "q"], ["pq"]),  # float: a graph call
        helper.make_node("Add", ["xg", "pq"], ["y"]),
    ]
    inits = {
        "i": np.array([0, 2, 1], "int64"),
        "one": np.array(1, "int64"),
        "p": RNG.standard_normal(3).astype("float32"),
        "q": RNG.standard_normal(3).astype("float32"),
    }
    model = _model(nodes, [2, 4], inits)
    assert sorted(_ops(from_onnx(model))) == ["relax.add", "relax.add", "relax.take"]
    _matches_ort(model, RNG.standard_normal((2, 4)).astype("float32"))


def test_an_op_kiln_cannot_convert_still_imports_on_constants() -> None:
    """ScatterND has no converter: on constants it is ONNX's own evaluation or nothing."""
    nodes = [
        helper.make_node("ScatterND", ["data", "idx", "upd"], ["c"]),
        helper.make_node("Add", ["x", "c"], ["y"]),
    ]
    inits = {
        "data": RNG.standard_normal(6).astype("float32"),
        "idx": np.array([[1], [4]], "int64"),
        "upd": np.float32([10, 20]),
    }
    model = _model(nodes, [6], inits)
    assert _ops(from_onnx(model)) == ["relax.add"]
    _matches_ort(model, RNG.standard_normal(6).astype("float32"))


def test_read_as_values_stops_at_shape() -> None:
    """A Reshape's shape and what it is computed from are read as values; the tensor whose
    Shape is taken is not."""
    nodes = [
        helper.make_node("Transpose", ["w"], ["wt"]),
        helper.make_node("Shape", ["wt"], ["s"]),
        helper.make_node("Cast", ["s"], ["s2"], to=TensorProto.INT64),
        helper.make_node("Reshape", ["x", "s2"], ["y"]),
    ]
    graph = onnx.load_from_string(_model(nodes, [6], {"w": np.zeros((2, 3), "float32")})).graph
    assert V.read_as_values(graph.node) == {"s2", "s"}
