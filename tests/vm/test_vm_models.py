"""Models through the real lowering path (FuseOps, LowerTE, the VM passes) in both VM modes,
against numpy: a conv2d -> bias -> relu -> residual block, an MLP, a layer_norm / softmax block,
symbolic batch sizes, a result whose shape a shape function computes at run time; fusion is
checked in the executable's kernel table and in ``vm.profile``."""

# ruff: noqa: F821, F841 - names in R scripts are script variables, not Python names

from __future__ import annotations

import numpy as np
import pytest

from kiln.examples.models import MLP, deep_mlp, deep_mlp_reference, mlp_reference, mlp_weights
from kiln.script import ir as I
from kiln.script import relax as R
from tests.relax.backend.test_dnnl import _conv
from tests.vm.harness import machine, run_both

RNG = np.random.default_rng(11)
MODES = ("bytecode", "compiled")


def f32(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype("float32")


def kernels(mod, mode: str = "compiled") -> tuple[str, ...]:
    return machine(mod, mode).executable.kernels


@I.ir_module
class ConvBlock:
    @R.function
    def main(
        x: R.Tensor((1, 16, 14, 14), "float32"),
        w: R.Tensor((16, 16, 3, 3), "float32"),
        b: R.Tensor((1, 16, 1, 1), "float32"),
    ) -> R.Tensor((1, 16, 14, 14), "float32"):
        with R.dataflow():
            c = R.nn.conv2d(x, w, padding=1)
            a = R.add(c, b)
            r = R.nn.relu(a)
            y = R.add(r, x)
            R.output(y)
        return y


def test_conv_bias_relu_residual_block_is_one_kernel() -> None:
    x, w, b = f32(1, 16, 14, 14), f32(16, 16, 3, 3, scale=0.1), f32(1, 16, 1, 1)
    got = run_both(ConvBlock, "main", x, w, b)
    np.testing.assert_allclose(got, np.maximum(_conv(x, w) + b, 0) + x, rtol=1e-4, atol=1e-4)
    for mode in MODES:
        assert kernels(ConvBlock, mode) == ("default_fused_conv2d_add_relu_add",)
        report = machine(ConvBlock, mode).profile("main", x, w, b)
        assert [(r.kernel, r.calls) for r in report.rows] == [
            ("default_fused_conv2d_add_relu_add", 1)
        ]


@pytest.mark.parametrize("batch", [1, 7])
def test_mlp_with_a_symbolic_batch_fuses_each_layer(batch: int) -> None:
    x, weights = f32(batch, 64), mlp_weights()
    got = run_both(MLP, "main", x, *weights)
    np.testing.assert_allclose(got, mlp_reference(x, *weights), rtol=1e-4, atol=1e-6)
    for mode in MODES:
        report = machine(MLP, mode).profile("main", x, *weights)
        fused = sorted(r.kernel for r in report.rows if "fused" in r.kernel)
        assert fused == [
            "default_fused_matmul_add",
            "default_fused_matmul_add_relu",
            "default_fused_matmul_add_relu_1",  # another shape: its own kernel
            "default_fused_softmax",
        ]
        assert all(r.calls == 1 for r in report.rows)


def test_a_deep_mlp_has_one_kernel_for_all_its_equal_layers() -> None:
    mod = deep_mlp(layers=6, width=32, batch=4)
    x, w, b = f32(4, 32), f32(32, 32, scale=0.2), f32(32)
    got = run_both(mod, "main", x, w, b)
    np.testing.assert_allclose(got, deep_mlp_reference(x, w, b, 6), rtol=1e-4, atol=1e-5)
    assert kernels(mod) == ("default_fused_matmul_add_relu",)
    report = machine(mod, "bytecode").profile("main", x, w, b)
    assert [(r.kernel, r.calls) for r in report.rows] == [("default_fused_matmul_add_relu", 6)]


@I.ir_module
class Norms:
    @R.function
    def main(
        x: R.Tensor(("n", 64), "float32"),
        g: R.Tensor((64,), "float32"),
        b: R.Tensor((64,), "float32"),
    ) -> R.Tensor(("n", 64), "float32"):
        with R.dataflow():
            h = R.nn.layer_norm(x, g, b, axes=-1)
            s = R.nn.softmax(h, axis=-1)
            y = R.multiply(s, x)
            R.output(y)
        return y


def _norms_reference(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
    h = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g + b
    e = np.exp(h - h.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True) * x


@pytest.mark.parametrize("batch", [3, 16])
def test_layer_norm_softmax_block_with_a_symbolic_batch(batch: int) -> None:
    x, g, b = f32(batch, 64), f32(64), f32(64)
    got = run_both(Norms, "main", x, g, b)
    np.testing.assert_allclose(got, _norms_reference(x, g, b), rtol=1e-4, atol=1e-5)
    assert {"default_fused_layer_norm", "default_fused_softmax"} <= set(kernels(Norms))


@I.ir_module
class Dynamic:
    @R.function(private=True)
    def grow(x: R.Tensor(("n", 7), "float32")) -> R.Tensor(ndim=2, dtype="float32"):
        R.func_attr({"Primitive": 1})
        y = R.concat((x, x), axis=0)
        z = R.exp(y)
        return z

    @R.function
    def main(a: R.Tensor(("m", 7), "float32")) -> R.Tensor(ndim=2, dtype="float32"):
        cls = Dynamic
        b = cls.grow(a)
        c = cls.grow(b)
        return c


@pytest.mark.parametrize("m", [1, 3])
def test_a_result_of_unknown_shape_is_sized_by_its_shape_function(m: int) -> None:
    a = f32(m, 7, scale=0.1)
    b = np.exp(np.concatenate([a, a]))
    want = np.exp(np.concatenate([b, b]))
    got = run_both(Dynamic, "main", a)
    assert got.shape == (4 * m, 7)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert {"shape_func_concat_exp", "default_fused_concat_exp"} <= set(kernels(Dynamic))
    report = machine(Dynamic, "compiled").profile("main", a)
    calls = {r.kernel: r.calls for r in report.rows}
    assert calls["shape_func_concat_exp"] == 2 and calls["default_fused_concat_exp"] == 2


def test_a_wrong_input_shape_is_still_named() -> None:
    x, w, b = f32(1, 16, 14, 14), f32(16, 16, 3, 3), f32(1, 16, 1, 2)
    for mode in MODES:
        with pytest.raises(ValueError, match=r"main: argument b.shape\[3\] expected 1, got 2"):
            machine(ConvBlock, mode)["main"](x, w, b)
