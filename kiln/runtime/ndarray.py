"""`NDArray`: what a `VirtualMachine` returns for a tensor (a tvm-ffi tensor plus ``.numpy()``).

NOTE: tvm-ffi 0.1.15's ``Tensor`` has no ``.numpy()``, and replacing the class tvm-ffi builds
for every returned tensor (``tvm_ffi.core._set_class_tensor``) would change it for the whole
process. A slotted wrapper costs ~0.1 us per returned tensor instead. It passes back into VM
functions and kernels without conversion (the ``__tvm_ffi_object__`` protocol) and into numpy,
PyTorch and others through DLPack, zero-copy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tvm_ffi

from kiln.runtime.tensor import to_numpy


class NDArray:
    """A tensor computed by the VM. ``numpy()`` copies; ``np.asarray`` / DLPack do not."""

    __slots__ = ("handle",)

    def __init__(self, handle: tvm_ffi.Tensor) -> None:
        self.handle = handle

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.handle.shape)

    @property
    def dtype(self) -> str:
        return str(self.handle.dtype)

    @property
    def ndim(self) -> int:
        return len(self.handle.shape)

    @property
    def device(self) -> tvm_ffi.Device:
        return self.handle.device

    def numpy(self) -> np.ndarray:
        """A host copy as a numpy array (the VM may hand out views of read-only constants)."""
        return np.array(to_numpy(self.handle), copy=True)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        view = to_numpy(self.handle)
        if copy:
            view = view.copy()
        return view if dtype is None else view.astype(dtype, copy=False)

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.handle.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.handle.__dlpack_device__()

    def __tvm_ffi_object__(self) -> tvm_ffi.Tensor:
        return self.handle

    def __repr__(self) -> str:
        return f"kiln.NDArray(shape={self.shape}, dtype={self.dtype}, device={self.device})"


def wrap_result(value: Any) -> Any:
    """A VM result for Python: tensors as `NDArray`, tuples (tvm-ffi Arrays) as tuples."""
    kind = type(value)
    if kind is tvm_ffi.Tensor:
        return NDArray(value)
    if kind is tvm_ffi.Array:
        return tuple(wrap_result(v) for v in value)
    return value
