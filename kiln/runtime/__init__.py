"""kiln's runtime: load and run compiled libraries through tvm-ffi, without the compiler.

Besides `Module` and tensors it holds the virtual machine: `VirtualMachine` runs an `Executable`
(format: `vm_format`) in bytecode or compiled mode, over builtins written in C (`vm_builtins`,
`vm_c/`); `vm_anylist` is compiled mode's C contract and `vm_export` the one-file deployment,
which links kiln's runtime library (`vm_runtime`: the VM and the thread pool) into every model.

This layer imports only the standard library, numpy, tvm_ffi, `kiln.errors` and `kiln.config`;
never `kiln.ir`, `kiln.tir` or anything above them, so a compiled artifact loads on its own.
"""

import sys

from kiln import config

config.apply_openmp_defaults()  # before tvm_ffi (and through it libgomp) is first loaded


def _import_tvm_ffi() -> None:
    """Import tvm_ffi without letting it import torch, unless the process already has.

    NOTE: tvm_ffi imports torch whenever it is installed (for its torch fast paths); that is
    2.8 s of every process that loads kiln's runtime (measured: a child that builds and runs one
    kernel, 3.5 s with the import, 0.7 s without). kiln hands tensors to tvm_ffi through
    ``__dlpack__``, which needs no torch module, so torch tensors still convert; a later
    ``import torch`` works as usual (it then shares the libgomp kiln's kernels loaded)."""
    blocked = "torch" not in sys.modules
    if blocked:
        sys.modules["torch"] = None  # type: ignore[assignment]  # `import torch` fails
    try:
        import tvm_ffi  # noqa: F401
    finally:
        if blocked and sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]


_import_tvm_ffi()

import tvm_ffi  # noqa: E402

import kiln.runtime.thread_pool  # noqa: E402,F401  (registers kiln.runtime.thread_pool)
from kiln.errors import KernelIndexError  # noqa: E402

tvm_ffi.register_error("KernelIndexError", KernelIndexError)  # raised by generated C by name
from kiln.runtime.cuda_runtime import is_available as cuda_available  # noqa: E402
from kiln.runtime.cuda_runtime import unavailable_reason as cuda_unavailable_reason  # noqa: E402
from kiln.runtime.function import LibraryFunction  # noqa: E402
from kiln.runtime.metadata import ArgInfo, metadata_c_source  # noqa: E402
from kiln.runtime.module import (  # noqa: E402
    FunctionNotFoundError,
    Module,
    build_module,
    load_module,
)
from kiln.runtime.ndarray import NDArray  # noqa: E402
from kiln.runtime.tensor import Device, Tensor, cpu, cuda, empty, tensor, to_numpy  # noqa: E402
from kiln.runtime.toolchain import DEFAULT_FLAGS, compile_c, find_compiler  # noqa: E402
from kiln.runtime.vm import ProfileReport, VirtualMachine  # noqa: E402
from kiln.runtime.vm_export import export_library, load_executable  # noqa: E402
from kiln.runtime.vm_format import Executable  # noqa: E402

__all__ = [
    "ArgInfo",
    "DEFAULT_FLAGS",
    "Device",
    "Executable",
    "FunctionNotFoundError",
    "LibraryFunction",
    "Module",
    "NDArray",
    "ProfileReport",
    "Tensor",
    "VirtualMachine",
    "build_module",
    "compile_c",
    "cpu",
    "cuda",
    "cuda_available",
    "cuda_unavailable_reason",
    "empty",
    "export_library",
    "find_compiler",
    "load_executable",
    "load_module",
    "metadata_c_source",
    "tensor",
    "to_numpy",
]
