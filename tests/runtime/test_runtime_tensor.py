"""Devices and tensors: zero-copy in and out of numpy, allocation, device checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tvm_ffi

from kiln.errors import KilnError
from kiln.runtime import Device, build_module, cpu, cuda, empty, tensor, to_numpy
from kiln.runtime.tensor import ALIGNMENT


def test_devices() -> None:
    assert isinstance(cpu(), Device)
    assert (cpu().type, cpu().index, cpu().dlpack_device_type()) == ("cpu", 0, 1)
    assert (cuda(1).type, cuda(1).index, cuda(1).dlpack_device_type()) == ("cuda", 1, 2)
    assert cpu(0) == cpu() and cpu() != cuda()


def test_tensor_from_numpy_is_zero_copy() -> None:
    a = np.arange(6, dtype="float32").reshape(2, 3)
    t = tensor(a)
    assert isinstance(t, tvm_ffi.Tensor)
    assert t.shape == (2, 3) and str(t.dtype) == "float32" and t.device == cpu()
    assert t.data_ptr() == a.ctypes.data
    back = to_numpy(t)
    assert np.shares_memory(back, a)
    a[0, 0] = 42
    assert back[0, 0] == 42
    assert tensor(t) is t


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.arange(12, dtype="float64").reshape(3, 4)[:, ::2],  # strided view
        lambda: np.broadcast_to(np.arange(3, dtype="int32"), (2, 3)),  # read-only view
        lambda: [[1.5, 2.5], [3.5, 4.5]],  # nested list
    ],
)
def test_tensor_copies_when_it_must(make: object) -> None:
    data = make()  # type: ignore[operator]
    t = tensor(data)
    assert t.is_contiguous() and t.data_ptr() % ALIGNMENT == 0
    np.testing.assert_array_equal(to_numpy(t), np.asarray(data))


def test_empty() -> None:
    t = empty((4, 5), "int64")
    assert t.shape == (4, 5) and str(t.dtype) == "int64"
    assert t.is_contiguous() and t.data_ptr() % ALIGNMENT == 0
    assert to_numpy(t).dtype == np.int64
    assert empty([3]).shape == (3,) and str(empty([3]).dtype) == "float32"
    assert empty((0, 2)).shape == (0, 2)


def test_empty_tensor_feeds_compiled_function(cache_dir: Path, kernels_source: str) -> None:
    m = build_module(kernels_source)
    out = empty((2, 2))
    m["add_one"](np.full((2, 2), 3, dtype="float32"), out)
    np.testing.assert_array_equal(to_numpy(out), np.full((2, 2), 4))


def test_cuda_transfers_without_a_gpu_are_refused_clearly() -> None:
    from kiln.runtime import cuda_runtime as kcuda

    if kcuda.is_available():
        pytest.skip("an NVIDIA GPU and driver are present")
    with pytest.raises(RuntimeError, match="CUDA driver"):
        empty((2,), device=cuda())
    with pytest.raises(RuntimeError, match="CUDA driver"):
        tensor(np.zeros(2), device=cuda())


def test_unsupported_dtype() -> None:
    with pytest.raises(KilnError, match="numpy dtype"):
        tensor(np.array(["a", "b"]))


def test_tensor_from_torch() -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    x = torch.arange(4, dtype=torch.float32)
    t = tensor(x)
    assert t.data_ptr() == x.data_ptr()
    assert torch.equal(torch.from_dlpack(t), x)
