"""Devices and tensors over tvm-ffi: thin helpers, no tensor class of kiln's own.

- `Device` is `tvm_ffi.Device` (a DLPack device type + index), so a device passes straight into
  a compiled function as a `kTVMFFIDevice` argument. `cpu(i)` / `cuda(i)` build one.
- `tensor(x)` / `empty(shape)` return a `tvm_ffi.Tensor`. Compiled functions also accept numpy
  arrays and PyTorch tensors directly (tvm-ffi converts anything with `__dlpack__`), so these
  helpers are for when a tvm-ffi tensor is wanted explicitly.
- `to_numpy(t)` is kiln's own helper because `tvm_ffi.Tensor` has no `.numpy()` in tvm-ffi
  0.1.15; it is `np.from_dlpack(t)`, a zero-copy view that keeps `t`'s memory alive.

numpy hands tvm-ffi neither read-only arrays (tvm-ffi asks for DLPack 0.x, which cannot say
"read-only") nor the ml_dtypes storage floats (bfloat16, float8_e4m3fn, float8_e5m2: DLPack
exporters refuse them). `array_tensor(a)` bridges both, zero-copy: it exports the array through
versioned DLPack and, for a storage float, exports its bits (uint16 / uint8) and relabels them
with the DLPack type code of the float (`STORAGE_DTYPES`). `tensor` uses it for storage floats,
`to_numpy` does the reverse (an ml_dtypes array when ml_dtypes is installed), and a compiled
function's call path (`kiln.runtime.module.LibraryFunction`) uses it for such arguments.

On a CUDA device (`cuda(i)`), `empty` allocates device memory and `tensor` / `to_numpy` copy
through kiln's CUDA runtime (`kiln.runtime.cuda_runtime`); without a GPU they raise
`RuntimeError` saying so. CUDA tensors made elsewhere (PyTorch, CuPy) are wrapped zero-copy.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import numpy as np
import tvm_ffi

from kiln.errors import KilnError
from kiln.runtime import cuda_runtime as _cuda

Device = tvm_ffi.Device
"""A device: `.type` ("cpu", "cuda", ...), `.index`, `.dlpack_device_type()`."""

Tensor = tvm_ffi.Tensor

ALIGNMENT = 64
"""Byte alignment of the data of tensors allocated by `empty` and of copies made by `tensor`."""

_CPU = 1  # kDLCPU
_CUDA = 2  # kDLCUDA


STORAGE_DTYPES: dict[str, tuple[int, int]] = {
    "bfloat16": (4, 16),
    "float8_e4m3fn": (10, 8),
    "float8_e5m2": (12, 8),
}
"""numpy dtype names (from ml_dtypes) of storage floats -> their DLPack (type code, bits)."""
_UINT_CODE = 1  # kDLUInt


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device_type", ctypes.c_int32),
        ("device_id", ctypes.c_int32),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.c_void_p),
        ("strides", ctypes.c_void_p),
        ("byte_offset", ctypes.c_uint64),
    ]


# NOTE: the layouts of dlpack.h: DLManagedTensor starts with its DLTensor; the versioned struct
# has its version (2 x uint32), manager_ctx, deleter and flags before it.
_CAPSULE_TENSOR_OFFSET = {b"dltensor": 0, b"dltensor_versioned": 32}
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]


def _relabel(capsule: Any, code: int) -> Any:
    """Set the DLPack type code of the (unconsumed) tensor in ``capsule``; returns it."""
    name = _capsule_name(capsule)
    address = _capsule_pointer(capsule, name) + _CAPSULE_TENSOR_OFFSET[name]
    _DLTensor.from_address(address).dtype.code = code
    return capsule


def array_tensor(array: np.ndarray) -> Tensor:
    """``array`` as a tvm-ffi tensor on the same memory, for arrays tvm-ffi cannot take from
    numpy itself: read-only arrays and ml_dtypes storage floats (see module docstring).

    With numpy older than 2.1 (no versioned DLPack), a read-only array is copied instead."""
    code = STORAGE_DTYPES.get(array.dtype.name, (None, 0))[0]
    bits = array if code is None else array.view(f"uint{array.dtype.itemsize * 8}")
    try:
        capsule = bits.__dlpack__(max_version=(1, 0))
    except TypeError:  # numpy < 2.1
        capsule = (bits if bits.flags.writeable else bits.copy()).__dlpack__()
    try:
        return tvm_ffi.from_dlpack(capsule if code is None else _relabel(capsule, code))
    except (BufferError, TypeError, ValueError, RuntimeError) as e:
        raise KilnError(f"cannot make a tensor of numpy dtype {array.dtype}: {e}") from e


class _Relabelled:
    """A DLPack producer handing out one capsule (numpy's `from_dlpack` asks for `__dlpack__`)."""

    def __init__(self, capsule: Any, device: tuple[int, int]) -> None:
        self.capsule, self.device = capsule, device

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device


def _storage_to_numpy(t: Tensor) -> np.ndarray:
    """A numpy view of a CPU tensor of a storage float: an ml_dtypes array of its type."""
    name = str(t.dtype)
    try:
        import ml_dtypes  # noqa: F401  (registers the dtypes with numpy)
    except ImportError as e:
        raise KilnError(
            f"to_numpy: a {name} tensor needs the ml_dtypes package for its numpy dtype "
            "(pip install ml_dtypes)"
        ) from e
    capsule = _relabel(t.__dlpack__(max_version=(1, 0)), _UINT_CODE)
    bits = np.from_dlpack(_Relabelled(capsule, t.__dlpack_device__()))
    return bits.view(np.dtype(name))


def name_unconvertible(fn: str, label: str, value: Any, error: BaseException) -> None:
    """Raise ``error`` again naming ``label`` (or an item of it, for a tuple or list) if tvm-ffi
    cannot convert ``value`` through DLPack; return when it can (a call's failure path)."""
    if isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            name_unconvertible(fn, f"{label}[{i}]", v, error)
        return
    if not hasattr(type(value), "__dlpack__") or isinstance(value, Tensor):
        return
    try:
        tvm_ffi.from_dlpack(value)
    except Exception as e:  # noqa: BLE001 - any failure of this argument is the answer
        kind = type(error) if isinstance(error, (TypeError, ValueError)) else ValueError
        raise kind(
            f"{fn}: {label} ({type(value).__name__}) cannot be passed through DLPack: {e}"
        ) from error


def cpu(id: int = 0) -> Device:
    """The host CPU (DLPack kDLCPU)."""
    return tvm_ffi.device("cpu", id)


def cuda(id: int = 0) -> Device:
    """NVIDIA GPU number `id` (DLPack kDLCUDA)."""
    return tvm_ffi.device("cuda", id)


def _dlpack_device(obj: Any) -> tuple[int, int] | None:
    get = getattr(obj, "__dlpack_device__", None)
    if get is None:
        return None
    dev_type, dev_id = get()
    return int(dev_type), int(dev_id)


def _aligned_empty(shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    """A C-contiguous numpy array whose data starts on an `ALIGNMENT`-byte boundary."""
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    offset = (-raw.ctypes.data) % ALIGNMENT
    return raw[offset : offset + nbytes].view(dtype).reshape(shape)


def _from_numpy(array: np.ndarray, copy: bool = False) -> Tensor:
    # NOTE: numpy refuses to export read-only arrays through DLPack 0.x, so those are copied.
    if copy or not array.flags.c_contiguous or not array.flags.writeable:
        dense = _aligned_empty(array.shape, array.dtype)
        dense[...] = array
        array = dense
    if array.dtype.name in STORAGE_DTYPES:
        return array_tensor(array)
    try:
        return tvm_ffi.from_dlpack(array)
    except (BufferError, TypeError, ValueError, RuntimeError) as e:
        raise KilnError(f"cannot make a tensor of numpy dtype {array.dtype}: {e}") from e


def _check_cpu(device: Device, what: str) -> None:
    if device.dlpack_device_type() not in (_CPU, _CUDA):
        raise KilnError(
            f"{what} on {device} needs kiln's CUDA runtime, which is not available yet; "
            "pass a tensor created on that device by PyTorch or CuPy instead"
        )


def tensor(data: Any, device: Device | None = None) -> Tensor:
    """A C-contiguous tvm-ffi tensor holding `data` (numpy array, DLPack object, or nested list).

    Zero-copy when `data` already lives on `device` and is C-contiguous (numpy arrays keep their
    own alignment); otherwise a contiguous, `ALIGNMENT`-aligned copy. `device` defaults to CPU.
    """
    device = cpu() if device is None else device
    if isinstance(data, Tensor) and data.device == device and data.is_contiguous():
        return data
    where = _dlpack_device(data)
    want = (device.dlpack_device_type(), device.index)
    if where is not None and where == want and not isinstance(data, np.ndarray):
        t = tvm_ffi.from_dlpack(data)
        if t.is_contiguous():
            return t
    _check_cpu(device, "copying data")
    if device.dlpack_device_type() == _CUDA:
        host = to_numpy(data) if where is not None else np.asarray(data)
        return _cuda.to_device(host, device.index)
    if where is not None and where[0] == _CUDA:
        return _from_numpy(_cuda.to_numpy(data))
    if where is not None and where[0] != _CPU:
        raise KilnError(f"copying a tensor from device {where} to the CPU is not supported yet")
    if isinstance(data, np.ndarray):
        return _from_numpy(data)
    if where is not None:
        return _from_numpy(np.from_dlpack(data))
    return _from_numpy(np.asarray(data), copy=True)


def empty(
    shape: Sequence[int], dtype: str | np.dtype[Any] = "float32", device: Device | None = None
) -> Tensor:
    """An uninitialized C-contiguous tensor with `ALIGNMENT`-byte aligned data."""
    device = cpu() if device is None else device
    _check_cpu(device, "allocating memory")
    if device.dlpack_device_type() == _CUDA:
        return _cuda.empty(shape, dtype, device.index)
    np_dtype = np.dtype(dtype)
    return _from_numpy(_aligned_empty(tuple(int(s) for s in shape), np_dtype))


def to_numpy(t: Any) -> np.ndarray:
    """A numpy view of CPU tensor `t` (zero-copy; the view keeps the memory alive), or a host
    copy of a CUDA tensor."""
    where = _dlpack_device(t)
    if where is not None and where[0] == _CUDA:
        return _cuda.to_numpy(t)
    if where is not None and where[0] != _CPU:
        raise KilnError(f"to_numpy: tensor lives on device {where}; copy it to the CPU first")
    if isinstance(t, Tensor) and str(t.dtype) in STORAGE_DTYPES:
        return _storage_to_numpy(t)
    return np.from_dlpack(t)
