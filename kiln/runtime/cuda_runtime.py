"""CUDA devices from Python: availability, device memory, copies (not the kernel launch path).

Built kernels launch from C (see `kiln.runtime.cuda_driver`); this module only serves callers
that want CUDA tensors without PyTorch or CuPy, and tests. It compiles kiln's small CUDA memory
library once (`kiln.runtime.cuda_memory`, cached like every C build) and calls it through
tvm-ffi. Everything works without a GPU in the sense that it fails cleanly: `is_available()` is
False, `unavailable_reason()` says why, and allocations raise `RuntimeError` with that reason.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import tvm_ffi

from kiln.runtime.cuda_memory import memory_library_source
from kiln.runtime.toolchain import compile_c

KDL_CUDA = 2


@functools.lru_cache(maxsize=None)
def _library() -> tvm_ffi.Module:
    path = compile_c(memory_library_source(), name_hint="kiln_cuda_memory")
    return tvm_ffi.load_module(str(path))


def _call(name: str, *args: Any) -> Any:
    return _library().get_function(name)(*args)


def unavailable_reason() -> str | None:
    """None when a CUDA driver and at least one GPU are usable, else why not."""
    reason = str(_call("kiln_cuda_status"))
    return reason or None


def is_available() -> bool:
    """True when kiln can run CUDA kernels on this machine."""
    return unavailable_reason() is None


def _dl_dtype(dtype: Any) -> tvm_ffi.dtype:
    if isinstance(dtype, np.dtype) or isinstance(dtype, type):
        dtype = np.dtype(dtype).name
    return tvm_ffi.dtype(str(dtype))


def empty(shape: Sequence[int], dtype: Any = "float32", device_id: int = 0) -> tvm_ffi.Tensor:
    """An uninitialized compact tensor in the memory of GPU ``device_id``."""
    dt = _dl_dtype(dtype)
    dims = [int(s) for s in shape]
    return _call("kiln_cuda_empty", device_id, dt.type_code, dt.bits, dt.lanes, *dims)


def to_device(array: np.ndarray, device_id: int = 0) -> tvm_ffi.Tensor:
    """A copy of a host array in the memory of GPU ``device_id``."""
    host = np.ascontiguousarray(array)
    out = empty(host.shape, host.dtype, device_id)
    _call("kiln_cuda_copy", out, host)
    return out


def to_numpy(t: Any) -> np.ndarray:
    """A host copy of CUDA tensor ``t`` (waits for the device's pending work first)."""
    src = t if isinstance(t, tvm_ffi.Tensor) else tvm_ffi.from_dlpack(t)
    out = np.empty(tuple(src.shape), dtype=_numpy_dtype(str(src.dtype)))
    _call("kiln_cuda_copy", out, src)
    return out


def copy(dst: Any, src: Any) -> None:
    """Copy the whole of ``src`` into ``dst`` (host or CUDA tensors of one byte size)."""
    _call("kiln_cuda_copy", dst, src)


def synchronize(device_id: int = 0) -> None:
    """Wait until GPU ``device_id`` finished its work."""
    _call("kiln_cuda_synchronize", device_id)


def _numpy_dtype(name: str) -> np.dtype[Any]:
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))
