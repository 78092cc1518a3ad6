"""Default CUDA schedules (`topi.schedule_for(..., target="cuda")`): the generated kernels bind
blocks and threads and compile with NVRTC; on a GPU they match numpy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import kiln
from kiln import te, topi
from kiln.runtime import Module

pytestmark = pytest.mark.needs_nvrtc

RNG = np.random.default_rng(0)

Case = Callable[[], tuple[list[te.Tensor], list[te.Tensor], Callable[..., np.ndarray]]]


def _elementwise() -> Any:
    x = te.placeholder((100, 37), name="x")
    y = topi.relu(topi.exp(x))
    return [x], y, lambda a: np.maximum(np.exp(a), 0)


def _broadcast_add() -> Any:
    x, b = te.placeholder((64, 33), name="x"), te.placeholder((33,), name="b")
    return [x, b], topi.add(x, b), lambda a, c: a + c


def _sum_axis() -> Any:
    x = te.placeholder((70, 45), name="x")
    return [x], topi.sum(x, axis=1), lambda a: a.sum(axis=1)


def _softmax() -> Any:
    x = te.placeholder((100, 37), name="x")

    def ref(a: np.ndarray) -> np.ndarray:
        e = np.exp(a - a.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    return [x], topi.nn.softmax(x), ref


def _layer_norm() -> Any:
    x = te.placeholder((24, 64), name="x")
    g, b = te.placeholder((64,), name="g"), te.placeholder((64,), name="b")

    def ref(a: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
        mu, var = a.mean(axis=1, keepdims=True), a.var(axis=1, keepdims=True)
        return (a - mu) / np.sqrt(var + 1e-5) * gamma + beta

    return [x, g, b], topi.nn.layer_norm(x, g, b), ref


def _matmul(n: int, k: int, m: int) -> Case:
    def case() -> Any:
        a, b = te.placeholder((n, k), name="A"), te.placeholder((k, m), name="B")
        return [a, b], topi.nn.matmul(a, b), lambda x, y: x @ y

    return case


CASES: dict[str, Case] = {
    "elementwise": _elementwise,
    "broadcast_add": _broadcast_add,
    "sum_axis": _sum_axis,
    "softmax": _softmax,
    "layer_norm": _layer_norm,
    "matmul_64": _matmul(64, 64, 64),
    "matmul_ragged": _matmul(50, 70, 30),
}


def _build(case: Case) -> tuple[Module, list[te.Tensor], te.Tensor, Callable[..., np.ndarray]]:
    inputs, out, ref = case()
    sch = topi.schedule_for(out, target="cuda")
    func = te.lower(sch, [*inputs, out], name="main")
    return kiln.build(func, target="cuda"), inputs, out, ref


def _device_source(mod: Module) -> str:
    src = mod.inspect_source()
    return src[src.index("// ---- CUDA device source") :]


@pytest.mark.parametrize("name", list(CASES))
def test_kernels_bind_blocks_and_threads(name: str) -> None:
    mod, _, _, _ = _build(CASES[name])
    src = _device_source(mod)
    assert "__global__" in src
    assert "threadIdx.x" in src
    # NOTE: sum_axis launches one block of 256 threads: blockIdx.x is always 0, and the
    # Simplify pass folds it away
    assert "blockIdx.x" in src or "kiln_cuda_launch(&kiln_cuda_kernels, 0, (int64_t)(1), 1, 1" in (
        mod.inspect_source()
    )


def test_intermediates_between_kernels_live_in_device_memory() -> None:
    # softmax's row max, sum and inverse pass from kernel to kernel: on the host stack they were
    # an illegal address on the GPU
    src = _build(CASES["softmax"])[0].inspect_source()
    host = src[: src.index("// ---- CUDA device source")]
    assert host.count("(float*)kiln_cuda_alloc(") == 3
    assert host.count("kiln_cuda_free(T_softmax_max") >= 2
    assert "_storage[" not in host


def test_matmul_tiles_are_two_dimensional() -> None:
    src = _device_source(_build(CASES["matmul_64"])[0])
    assert "blockIdx.y" in src and "threadIdx.y" in src
    assert "__launch_bounds__(256)" in src
    # the operand tiles are staged through shared memory, fenced by barriers
    assert "__shared__" in src and "__syncthreads()" in src


def test_ragged_matmul_fetches_and_syncs_in_every_thread() -> None:
    # the tails are guarded at the stores, so every thread reaches the fetch and both barriers
    src = _device_source(_build(CASES["matmul_ragged"])[0])
    assert src.count("__syncthreads()") == 2


def test_matmul_fetch_reuses_the_block_threads() -> None:
    inputs, out, _ = _matmul(64, 64, 64)()
    sch = topi.schedule_for(out, target="cuda")
    func = te.lower(sch, [*inputs, out], name="main")
    assert kiln.tir.verify_well_formed(func) == []
    text = str(func)
    assert 'A_shared = T.alloc_buffer((16, 16), "float32", scope="shared")' in text
    assert text.count("thread_binding") == 4  # the fetch binds no thread of its own


def test_softmax_output_has_one_block_per_row() -> None:
    src = _device_source(_build(CASES["softmax"])[0])
    assert "__launch_bounds__(37)" in src


def test_cpu_target_is_unchanged() -> None:
    x = te.placeholder((64, 64), name="x")
    sch = topi.schedule_for(topi.exp(x), target="c")
    text = str(te.lower(sch, [x, sch.outputs[0].output(0)], name="main"))
    assert "thread_binding" not in text


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(CASES))
def test_matches_numpy_on_gpu(name: str) -> None:
    from kiln.runtime import cuda_runtime

    reason = cuda_runtime.unavailable_reason()
    if reason is not None:
        pytest.skip(f"no usable NVIDIA GPU: {reason}")
    mod, inputs, out, ref = _build(CASES[name])
    arrays = [RNG.standard_normal(tuple(d.value for d in t.shape), dtype="float32") for t in inputs]
    shape = tuple(d.value for d in out.shape)
    result = cuda_runtime.empty(shape, "float32")
    mod["main"](*[cuda_runtime.to_device(a) for a in arrays], result)
    cuda_runtime.synchronize()
    want = ref(*arrays)
    np.testing.assert_allclose(cuda_runtime.to_numpy(result), want, rtol=1e-4, atol=1e-4)
