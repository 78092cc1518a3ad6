"""Kernels on a real GPU, compared with numpy (skipped without an NVIDIA GPU and driver)."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln.ir import IRModule
from kiln.runtime import Module, cuda, empty, tensor, to_numpy
from kiln.tir.transform import LowerIntrin, MakePackedAPI
from tests.codegen import cuda_kernels as K

pytestmark = [pytest.mark.gpu, pytest.mark.needs_nvrtc, pytest.mark.usefixtures("gpu")]
RNG = np.random.default_rng(0)


def build(mod: IRModule) -> Module:
    return kiln.build(mod, K.CUDA, pipeline=[MakePackedAPI(), LowerIntrin(K.CUDA)])


def on_gpu(x: np.ndarray) -> object:
    return tensor(x, device=cuda())


def test_vector_add() -> None:
    a, b = RNG.standard_normal((2, 1000), dtype="float32")
    c = empty((1000,), "float32", device=cuda())
    build(K.vector_add(1000))["vadd"](on_gpu(a), on_gpu(b), c)
    np.testing.assert_array_equal(to_numpy(c), a + b)


def test_shared_memory_reduction() -> None:
    x = RNG.standard_normal(4096, dtype="float32")
    out = empty((16,), "float32", device=cuda())
    build(K.block_sum())["block_sum"](on_gpu(x), out)
    np.testing.assert_allclose(to_numpy(out), x.reshape(16, 256).sum(axis=1), rtol=1e-5, atol=1e-4)


def test_tiled_matmul() -> None:
    a = RNG.standard_normal((64, 80), dtype="float32")
    b = RNG.standard_normal((80, 48), dtype="float32")
    c = empty((64 * 48,), "float32", device=cuda())
    build(K.tiled_matmul())["matmul"](on_gpu(a.ravel()), on_gpu(b.ravel()), c)
    np.testing.assert_allclose(to_numpy(c).reshape(64, 48), a @ b, rtol=1e-4, atol=1e-4)


def test_dynamic_shared_memory() -> None:
    x = np.arange(1024, dtype="float32")
    y = empty((1024,), "float32", device=cuda())
    build(K.reverse_blocks())["reverse"](on_gpu(x), y)
    np.testing.assert_array_equal(to_numpy(y), x.reshape(8, 128)[:, ::-1].ravel())


def test_device_helpers() -> None:
    x = RNG.standard_normal(256, dtype="float32")
    t = on_gpu(x)
    build(K.helper_call())["sq1"](t)
    np.testing.assert_allclose(to_numpy(t), x * x + 1, rtol=1e-6)


def test_half_kernel() -> None:
    x = RNG.standard_normal(512).astype("float16")
    y = empty((512,), "float16", device=cuda())
    build(K.exp_scale("float16"))["exp_scale"](on_gpu(x), y)
    ref = np.exp(x.astype("float32")).astype("float16") * np.float16(0.5) + x
    np.testing.assert_allclose(to_numpy(y).astype("float32"), ref, rtol=2e-3, atol=2e-3)


def test_cpu_arrays_are_refused() -> None:
    a = np.zeros(1000, "float32")
    with pytest.raises(ValueError, match="A.device expected cuda, got device type 1"):
        build(K.vector_add(1000))["vadd"](a, a, a)
