"""Shapes computed from data (a Reshape to an input tensor's values, an Expand, ConstantOfShape,
Range or Slice whose operands come from data): imported as fresh symbolic dims read when the
model runs, with ONNX's meaning (0 and -1, broadcasting, negative and clamped bounds, empty
results), compared with onnxruntime; a value ONNX refuses is a ValueError naming the node's
output, never a wrong result."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln.relax.frontend.onnx import from_onnx

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
h, T = onnx.helper, onnx.TensorProto
X = np.arange(6, dtype=np.float32).reshape(2, 3)


def _i64(*v: int) -> np.ndarray:
    return np.array(v, np.int64)


def _model(node, inputs: list[tuple[str, int, list]], out_type: int = T.FLOAT) -> onnx.ModelProto:
    infos = [h.make_tensor_value_info(n, t, s) for n, t, s in inputs]
    out = h.make_tensor_value_info(node.output[0], out_type, None)
    graph = h.make_graph([node], "g", infos, [out])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])


def _check(model: onnx.ModelProto, feeds: list[dict[str, np.ndarray]]) -> None:
    """The model, compiled once, matches onnxruntime for every feed (shape and values)."""
    compiled = kiln.compile(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for feed in feeds:
        (want,) = sess.run(None, feed)
        got = np.asarray(compiled(*feed.values()))
        assert got.shape == want.shape, feed
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_reshape_to_an_input_resolves_0_and_minus_1_when_it_runs() -> None:
    node = h.make_node("Reshape", ["x", "s"], ["y"])
    model = _model(node, [("x", T.FLOAT, [2, 3]), ("s", T.INT64, [2])])
    func = from_onnx(model)["main"]
    assert "vm.builtin.tensor_to_shape" in func.script()  # a run-time shape, not an error
    feeds = [_i64(3, 2), _i64(-1, 2), _i64(0, 3), _i64(6, -1), _i64(1, 6)]
    _check(model, [{"x": X, "s": s} for s in feeds])
    with pytest.raises(ValueError, match=r"y_Reshape_elements.* expected 8, got 6"):
        kiln.compile(model)(X, _i64(4, 2))


def test_reshape_to_a_value_computed_from_data() -> None:
    """The target is ``[max(x) as int, -1]``: truly data-dependent, two values of it."""
    nodes = [
        h.make_node("ReduceMax", ["x"], ["m"], keepdims=1),
        h.make_node("Cast", ["m"], ["mi"], to=T.INT64),
        h.make_node("Reshape", ["mi", "one"], ["rows"]),
        h.make_node("Concat", ["rows", "minus"], ["s"], axis=0),
        h.make_node("Reshape", ["x", "s"], ["y"]),
    ]
    inits = [
        onnx.numpy_helper.from_array(_i64(1), "one"),
        onnx.numpy_helper.from_array(_i64(-1), "minus"),
    ]
    x_info = h.make_tensor_value_info("x", T.FLOAT, [4, 3])
    graph = h.make_graph(nodes, "g", [x_info], [h.make_tensor_value_info("y", T.FLOAT, None)])
    graph.initializer.extend(inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    a, b = np.zeros((4, 3), np.float32), np.zeros((4, 3), np.float32)
    a[0, 0], b[0, 0] = 2, 6
    _check(model, [{"x": a}, {"x": b}])


def test_expand_to_an_input_broadcasts_and_checks_the_dims() -> None:
    node = h.make_node("Expand", ["x", "s"], ["y"])
    model = _model(node, [("x", T.FLOAT, [2, 3]), ("s", T.INT64, [3])])
    _check(model, [{"x": X, "s": s} for s in (_i64(4, 2, 3), _i64(4, 1, 3), _i64(1, 1, 1))])
    short = _model(node, [("x", T.FLOAT, [2, 1]), ("s", T.INT64, [1])])
    _check(short, [{"x": np.ascontiguousarray(X[:, :1]), "s": s} for s in (_i64(5), _i64(1))])
    with pytest.raises(ValueError, match=r"y_Expand_shape_dims\[1\] expected 2, got 5"):
        kiln.compile(model)(X, _i64(4, 5, 3))


def test_constant_of_shape_and_range_from_inputs() -> None:
    fill = h.make_tensor("v", T.FLOAT, [1], [2.5])
    node = h.make_node("ConstantOfShape", ["s"], ["y"], value=fill)
    _check(_model(node, [("s", T.INT64, [2])]), [{"s": _i64(0, 3)}, {"s": _i64(2, 3)}])
    rng = h.make_node("Range", ["a", "b", "c"], ["y"])
    for dt, npt in ((T.INT64, np.int64), (T.INT32, np.int32)):
        model = _model(rng, [(n, dt, []) for n in "abc"], dt)
        cases = [(9, 1, -2), (5, 1, 2), (1, 7, 3), (0, 0, 1), (-3, 4, 1)]
        feeds = [dict(zip("abc", (np.array(v, npt) for v in c))) for c in cases]
        _check(model, feeds)
    model = _model(rng, [(n, T.FLOAT, []) for n in "abc"])
    cases = [(1.0, 7.0, 1.5), (2.0, -1.0, -0.75), (0.0, 1.0, 2.0)]
    _check(model, [dict(zip("abc", (np.array(v, np.float32) for v in c))) for c in cases])


def test_slice_bounds_from_inputs_count_from_the_end_and_clamp() -> None:
    node = h.make_node("Slice", ["x", "st", "en", "ax"], ["y"])
    model = _model(
        node,
        [("x", T.FLOAT, [2, 3]), ("st", T.INT64, [1]), ("en", T.INT64, [1]), ("ax", T.INT64, [1])],
    )
    model.graph.input.pop()  # axes: an initializer
    model.graph.initializer.append(onnx.numpy_helper.from_array(_i64(1), "ax"))
    cases = [(-1, 100), (2, 1), (-100, -1), (0, 3), (1, 2), (3, 5)]
    _check(model, [{"x": X, "st": _i64(s), "en": _i64(e)} for s, e in cases])


@pytest.mark.parametrize("steps", [(2, 1), (-1, -2), (3, -3)], ids=["fwd", "back", "mixed"])
def test_slice_bounds_from_inputs_with_steps(steps: tuple[int, int]) -> None:
    """Run-time bounds with any steps on two axes (onnxruntime's clamping: a step back starts
    at n - 1 at most and ends at -1 at least), empty results included."""
    node = h.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])
    x = np.arange(42, dtype=np.float32).reshape(6, 7)
    model = _model(
        node,
        [("x", T.FLOAT, [6, 7]), ("st", T.INT64, [2]), ("en", T.INT64, [2]), ("ax", T.INT64, [2])],
    )
    model.graph.input.pop()  # axes and steps: initializers
    model.graph.initializer.append(onnx.numpy_helper.from_array(_i64(0, 1), "ax"))
    model.graph.initializer.append(onnx.numpy_helper.from_array(_i64(*steps), "sp"))
    big = 2**62
    cases = [((0, 0), (big, big)), ((-1, -1), (-big, -big)), ((5, 6), (0, 1)), ((1, 2), (5, 6))]
    cases += [((-100, 9), (100, -100)), ((2, 3), (2, 3)), ((10, -8), (-10, 8))]
    _check(model, [{"x": x, "st": _i64(*b), "en": _i64(*e)} for b, e in cases])


def test_slice_with_steps_up_to_symbolic_bounds() -> None:
    """Bounds computed from a symbolic dim (``x[:, t::-2]`` and ``x[:, :2*t:3]``, t the
    sequence): symbolic output dims, every sequence length matching onnxruntime."""
    inputs = [h.make_tensor_value_info("x", T.FLOAT, [2, 9])]
    inputs.append(h.make_tensor_value_info("s", T.FLOAT, [2, "t"]))
    nodes = [
        h.make_node("Shape", ["s"], ["sh"]),
        h.make_node("Slice", ["sh", "one", "two"], ["tt"]),
        h.make_node("Mul", ["tt", "two"], ["t2"]),
        h.make_node("Slice", ["x", "tt", "low", "ax", "back"], ["y1"]),
        h.make_node("Slice", ["x", "zero", "t2", "ax", "three"], ["y2"]),
    ]
    consts = dict(one=[1], two=[2], low=[-(2**62)], ax=[1], back=[-2], zero=[0], three=[3])
    graph = h.make_graph(
        nodes,
        "g",
        inputs,
        [h.make_tensor_value_info(y, T.FLOAT, None) for y in ("y1", "y2")],
        [onnx.numpy_helper.from_array(_i64(*v), k) for k, v in consts.items()],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    outs = from_onnx(model)["main"].ret_struct_info.fields
    assert all(o.dims[0].value == 2 and "t" in str(o.dims[1]) for o in outs), outs
    compiled = kiln.compile(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.arange(18, dtype=np.float32).reshape(2, 9)
    for n in (0, 1, 4, 5, 12):
        feed = {"x": x, "s": np.zeros((2, n), np.float32)}
        for got, want in zip(compiled(*feed.values()), sess.run(None, feed)):
            np.testing.assert_array_equal(np.asarray(got), want, err_msg=str(n))


@pytest.mark.parametrize(
    "onnx_type, dims, make",
    [
        (T.FLOAT, ["batch", 5], lambda r, b: np.where(r.random((b, 5)) < 0.4, 0, r.random((b, 5)))),
        (T.BOOL, [3, "n", 2], lambda r, b: r.random((3, b, 2)) < 0.5),
        (T.INT32, ["n"], lambda r, b: (r.integers(-2, 3, b)).astype(np.int32)),
    ],
    ids=["float-2d", "bool-3d", "int-1d"],
)
def test_nonzero_lists_indices_in_row_major_order(onnx_type, dims, make) -> None:
    node = h.make_node("NonZero", ["x"], ["y"])
    model = _model(node, [("x", onnx_type, dims)], T.INT64)
    rng = np.random.default_rng(len(dims))
    np_type = {T.FLOAT: np.float32, T.BOOL: np.bool_, T.INT32: np.int32}[onnx_type]
    feeds = [{"x": make(rng, b).astype(np_type)} for b in (1, 4, 37)]
    feeds.append({"x": np.zeros_like(feeds[0]["x"])})  # no element: a (rank, 0) result
    _check(model, feeds)


def test_nonzero_feeds_a_gather_masked_select() -> None:
    """``x[x > 0]`` as exported: NonZero, Transpose, GatherND over a run-time count."""
    nodes = [
        h.make_node("Greater", ["x", "zero"], ["m"]),
        h.make_node("NonZero", ["m"], ["i"]),
        h.make_node("Transpose", ["i"], ["t"]),
        h.make_node("GatherND", ["x", "t"], ["y"]),
    ]
    x_info = h.make_tensor_value_info("x", T.FLOAT, ["b", 4])
    graph = h.make_graph(nodes, "g", [x_info], [h.make_tensor_value_info("y", T.FLOAT, None)])
    graph.initializer.append(onnx.numpy_helper.from_array(np.float32(0), "zero"))
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    rng = np.random.default_rng(3)
    _check(model, [{"x": rng.standard_normal((b, 4)).astype(np.float32)} for b in (1, 6, 50)])
