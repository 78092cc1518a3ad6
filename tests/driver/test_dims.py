"""``kiln.compile(model, dims=...)``: size buckets (fixed-size models picked per call) and bounds
(a clear error before any kernel runs), compared with onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln.errors import FrontendError, KilnError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

RNG = np.random.default_rng(0)
W = RNG.standard_normal((16, 24)).astype("float32")


def _model() -> bytes:
    """``softmax(x @ W + 1) * 0.5`` over x: [batch, seq, 16]."""
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["y"]),
        helper.make_node("Add", ["y", "one"], ["z"]),
        helper.make_node("Softmax", ["z"], ["s"], axis=-1),
        helper.make_node("Mul", ["s", "half"], ["out"]),
    ]
    inits = [
        onnx.numpy_helper.from_array(W, "w"),
        onnx.numpy_helper.from_array(np.array(1.0, "float32"), "one"),
        onnx.numpy_helper.from_array(np.array(0.5, "float32"), "half"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 16])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", "seq", 24])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


MODEL = _model()


def _reference(x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def test_buckets_run_fixed_size_models_and_other_sizes_the_symbolic_one() -> None:
    model = kiln.compile(MODEL, dims={"seq": [4, 9], "batch": [2]})
    assert model.sizes is not None and sorted(model.sizes.variants) == [(2, 4), (2, 9)]
    bucket = model.sizes.variants[(2, 9)]
    assert bucket.inputs[0].dims == (2, 9, 16)  # compiled with both dims fixed
    for shape in [(2, 9, 16), (2, 4, 16), (3, 9, 16), (1, 7, 16)]:
        x = RNG.standard_normal(shape).astype("float32")
        picked = model.sizes.pick([x])
        assert (picked is not None) == (shape[0] == 2), shape
        np.testing.assert_allclose(model(x).numpy(), _reference(x), rtol=2e-3, atol=2e-3)


def test_bounds_refuse_a_size_outside_them_naming_input_dim_and_values() -> None:
    model = kiln.compile(MODEL, dims={"seq": (1, 8)})
    x = RNG.standard_normal((1, 8, 16)).astype("float32")
    np.testing.assert_allclose(model(x).numpy(), _reference(x), rtol=2e-3, atol=2e-3)
    with pytest.raises(FrontendError, match=r"input 'x' has seq = 9 \(dim 1\).*seq in \[1, 8\]"):
        model(np.zeros((1, 9, 16), "float32"))
    with pytest.raises(ValueError, match="seq = 9"):  # FrontendError is a ValueError
        model.profile(np.zeros((1, 9, 16), "float32"))


def test_repeated_shapes_skip_the_checks_but_new_ones_are_checked() -> None:
    """A call whose inputs have (dtype, shape)s seen before goes straight to the function
    picked then; any other dtype, rank or size is checked (and refused) on every call."""
    model = kiln.compile(MODEL, dims={"seq": [4], "batch": (1, 3)})
    for _ in range(2):
        for shape in [(2, 4, 16), (2, 5, 16)]:  # the bucket, then the symbolic model
            x = RNG.standard_normal(shape).astype("float32")
            np.testing.assert_allclose(model(x).numpy(), _reference(x), rtol=2e-3, atol=2e-3)
    assert len(model._checked) == 2
    assert model._checked[((np.dtype("float32"), (2, 4, 16)),)] is model.sizes.variants[(4,)]._call
    for _ in range(2):
        with pytest.raises(FrontendError, match=r"batch = 4 \(dim 0\).*batch in \[1, 3\]"):
            model(np.zeros((4, 4, 16), "float32"))
        with pytest.raises(FrontendError, match="input 'x' must be float32, got float64"):
            model(np.zeros((2, 4, 16)))
        with pytest.raises(FrontendError, match="must have 3 dims"):
            model(np.zeros((2, 4), "float32"))
    assert len(model._checked) == 2


def test_bad_declarations_are_named() -> None:
    with pytest.raises(KilnError, match=r"'sq', which is not a symbolic dim.*batch, seq"):
        kiln.compile(MODEL, dims={"sq": [8]})
    with pytest.raises(KilnError, match=r"give a list of sizes .* or a \(low, high\) tuple"):
        kiln.compile(MODEL, dims={"seq": 8})
    with pytest.raises(KilnError, match="the bounds are"):
        kiln.compile(MODEL, dims={"seq": (8, 1)})


def test_buckets_need_a_model_kiln_can_import_again() -> None:
    from kiln.relax.frontend.onnx import from_onnx

    with pytest.raises(KilnError, match="buckets .* need an ONNX model"):
        kiln.compile(from_onnx(MODEL), dims={"seq": [4]})
    model = kiln.compile(from_onnx(MODEL), dims={"seq": (1, 4)})  # bounds work for any model
    with pytest.raises(FrontendError, match="seq = 5"):
        model(np.zeros((1, 5, 16), "float32"))


@pytest.mark.parametrize("mode", ["compiled", "bytecode"])
def test_profile_names_the_kernels_a_symbolic_model_calls(mode: str) -> None:
    # NOTE: kernels with symbolic int parameters are called through vm.builtin.call_tir_dyn;
    # their time was reported as "VM and call overhead"
    model = kiln.compile(MODEL, exec_mode=mode)
    report = model.profile(RNG.standard_normal((2, 5, 16)).astype("float32"))
    names = [r.kernel for r in report.rows]
    assert any("matmul" in n for n in names) and any("softmax" in n for n in names), names
    assert report.kernel_us > 0


@pytest.mark.parametrize("seq", [3, 1000, 1030, 5000])
def test_symbolic_softmax_rows_short_and_long(seq: int) -> None:
    # a row's scratch is a stack array up to 1024 floats, heap memory beyond
    from kiln.script import ir as I
    from kiln.script import relax as R

    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((2, "n"), "float32")):
            with R.dataflow():
                y = R.nn.softmax(x)
                R.output(y)
            return y

    model = kiln.compile(Module)
    x = RNG.standard_normal((2, seq)).astype("float32") * 4
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(model(x).numpy(), e / e.sum(axis=1, keepdims=True), rtol=1e-5,
                               atol=1e-7)  # fmt: skip
