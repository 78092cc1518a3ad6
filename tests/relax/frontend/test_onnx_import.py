"""The ONNX importer: what it makes of a graph (spans, symbolic dims, folding), and bad input as
clear kiln errors naming the file, node or input."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import kiln  # noqa: E402
from kiln.errors import FrontendError  # noqa: E402
from kiln.relax.frontend.onnx import MAX_OPSET, MIN_OPSET, from_onnx  # noqa: E402
from kiln.relax.transform import FoldConstant, Normalize  # noqa: E402


def small_model(nodes: list, opset: int = 17, dims: tuple = ("n", 4)) -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return model.SerializeToString()


def relu_model(opset: int = 17) -> bytes:
    return small_model([helper.make_node("Relu", ["x"], ["y"], name="act")], opset)


def test_a_file_that_is_not_onnx(tmp_path) -> None:
    path = tmp_path / "notes.onnx"
    path.write_text("this is not a model\n" * 10)
    with pytest.raises(FrontendError, match="not an ONNX model"):
        kiln.compile(str(path))


def test_a_missing_file() -> None:
    with pytest.raises(FrontendError, match="no ONNX file"):
        from_onnx("/nonexistent/model.onnx")


def test_a_truncated_model(tmp_path) -> None:
    data = relu_model()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(FrontendError, match="truncated"):
        from_onnx(str(path))


def test_every_unsupported_op_is_listed_with_its_nodes() -> None:
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="ok"),
        helper.make_node("GridSample", ["a", "a"], ["b"], name="gs1"),
        helper.make_node("DFT", ["a"], ["c"], name="df"),
        helper.make_node("GridSample", ["a", "a"], ["d"], name="gs2"),
        helper.make_node("Identity", ["a"], ["y"], name="id"),
    ]
    with pytest.raises(FrontendError) as info:
        from_onnx(small_model(nodes))
    text = str(info.value)
    assert "2 operator(s) kiln does not support" in text
    assert "GridSample: 'gs1', 'gs2'" in text and "DFT: 'df'" in text


@pytest.mark.parametrize("opset", [MIN_OPSET - 1, MAX_OPSET + 1])
def test_an_opset_outside_the_range(opset: int) -> None:
    with pytest.raises(FrontendError, match=f"opset {opset} .* not supported"):
        from_onnx(relu_model(opset))


def test_wrong_input_shape_or_dtype_at_run_time_names_the_input() -> None:
    model = kiln.compile(relu_model(), exec_mode="bytecode")
    y = model(x=np.ones((3, 4), "float32")).numpy()
    assert y.shape == (3, 4)
    with pytest.raises(FrontendError, match="input 'x' .* dim 1 must be 4"):
        model(np.ones((3, 5), "float32"))
    with pytest.raises(FrontendError, match="input 'x' must be float32, got float64"):
        model(np.ones((3, 4), "float64"))
    with pytest.raises(FrontendError, match="no input 'z'"):
        model(z=np.ones((3, 4), "float32"))


def test_a_node_error_names_the_node() -> None:
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = helper.make_tensor("w", TensorProto.FLOAT, [5, 3], np.zeros(15, "float32"))
    graph = helper.make_graph(nodes, "g", [x], [y], initializer=[w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(FrontendError, match="node 'proj' \\(MatMul\\)"):
        from_onnx(model)


def test_node_names_become_spans_and_variable_names() -> None:
    mod = from_onnx(relu_model(), name="relu.onnx")
    binding = mod["main"].body.blocks[0].bindings[0]
    assert str(binding.value.span) == "relu.onnx: node 'act' (Relu)"
    assert "y: R.Tensor" in mod.script()


def test_dim_params_become_one_symbolic_var() -> None:
    nodes = [helper.make_node("Add", ["x", "x2"], ["y"], name="sum")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    x2 = helper.make_tensor_value_info("x2", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, "g", [x, x2], [y])
    mod = from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    p0, p1 = mod["main"].params
    assert p0.struct_info.dims[0] is p1.struct_info.dims[0]


def test_constant_and_cast_chains_disappear() -> None:
    """Identity and Dropout leave nothing; the float Casts of a constant are graph ops, folded
    by FoldConstant (the one constant folder), not by the importer."""
    c = helper.make_tensor("c", TensorProto.FLOAT, [4], np.arange(4, dtype="float32"))
    nodes = [
        helper.make_node("Constant", [], ["k"], value=c),
        helper.make_node("Cast", ["k"], ["k64"], to=TensorProto.DOUBLE),
        helper.make_node("Identity", ["k64"], ["k2"]),
        helper.make_node("Cast", ["k2"], ["k32"], to=TensorProto.FLOAT),
        helper.make_node("Dropout", ["k32"], ["kd"]),
        helper.make_node("Add", ["x", "kd"], ["y"], name="add"),
    ]
    mod = from_onnx(small_model(nodes))

    def ops(m: object) -> list[str]:
        bindings = m["main"].body.blocks[0].bindings  # type: ignore[index]
        return [b.value.op.name for b in bindings if hasattr(b.value, "op")]

    assert ops(mod) == ["relax.astype", "relax.astype", "relax.add"]
    folded = FoldConstant()(Normalize()(mod))
    assert ops(folded) == ["relax.add"]
    add = folded["main"].body.blocks[0].bindings[0].value
    np.testing.assert_array_equal(add.args[1].data, np.arange(4, dtype="float32"))


def test_shapes_fold_when_static_and_compute_at_run_time_when_symbolic() -> None:
    # y = Reshape(x, Concat(Shape(x)[0:1], [-1])) ; z = ConstantOfShape(Shape(x)) + x
    shape_nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Slice", ["s", "zero", "one"], ["n"]),
        helper.make_node("Concat", ["n", "minus1"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["r"], name="reshape"),
        helper.make_node("ConstantOfShape", ["s"], ["ones"],
                         value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
        helper.make_node("Add", ["r", "ones"], ["y"]),
    ]  # fmt: skip
    inits = [
        helper.make_tensor("zero", TensorProto.INT64, [1], [0]),
        helper.make_tensor("one", TensorProto.INT64, [1], [1]),
        helper.make_tensor("minus1", TensorProto.INT64, [1], [-1]),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph(shape_nodes, "g", [x], [y], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    mod = from_onnx(model)
    text = mod.script()
    assert "R.shape([n, 4])" in text and "shape_of" not in text
    compiled = kiln.compile(model, exec_mode="bytecode")
    for n in (2, 5):
        x_np = np.arange(4 * n, dtype="float32").reshape(n, 4)
        np.testing.assert_allclose(compiled(x_np).numpy(), x_np + 1)


def test_a_shape_used_as_data_is_computed_at_run_time() -> None:
    # y = x / float(Shape(x)[1]): the divisor is the symbolic column count m
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "one"], ["m"], axis=0),
        helper.make_node("Cast", ["m"], ["mf"], to=TensorProto.FLOAT),
        helper.make_node("Div", ["x", "mf"], ["y"], name="normalize"),
    ]
    one = helper.make_tensor("one", TensorProto.INT64, [], [1])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "m"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, "g", [x], [y], initializer=[one])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    compiled = kiln.compile(model, exec_mode="bytecode")
    for m in (3, 8):
        x_np = np.ones((2, m), "float32")
        np.testing.assert_allclose(compiled(x_np).numpy(), x_np / m)
