"""The VM runtime library: the C builtins and interpreter, compiled once per machine and loaded.

`load_vm_runtime()` concatenates kiln/runtime/vm_c/{anylist.h, common.h, builtins.c, checks.c,
interp.c, vm.c} into one C file, compiles it with kiln's cached toolchain (first use only; later
processes find it in the cache), loads it through tvm-ffi and calls its init function, which
registers every ``vm.builtin.*`` global and ``kiln.vm.create``. The library stays loaded for the
life of the process (the registered globals point into it). Calling it again returns the same
library; registering twice would be harmless too.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import tvm_ffi

from kiln.errors import KilnError
from kiln.runtime.toolchain import compile_c
from kiln.runtime.vm_builtins import BUILTINS
from kiln.runtime.vm_format import VM_FORMAT_VERSION

C_DIR = Path(__file__).parent / "vm_c"
C_PARTS = ("anylist.h", "common.h", "builtins.c", "checks.c", "interp.c", "vm.c")
"""The runtime's C fragments, in the order they are concatenated."""

RUNTIME_FLAGS = ("-O2", "-fPIC", "-shared")
"""Portable flags: the runtime has no hot loops that -march would help."""

ABI_VERSION = 2
"""`KILN_VM_ABI_VERSION` of anylist.h that this Python code was written against."""


def runtime_c_source() -> str:
    """The C source of the VM runtime library (one translation unit)."""
    return "\n".join((C_DIR / part).read_text() for part in C_PARTS)


@dataclass(frozen=True)
class VMRuntime:
    """The loaded runtime library: its tvm-ffi module and the VM constructor."""

    module: tvm_ffi.Module
    path: Path
    create: tvm_ffi.Function


@functools.lru_cache(maxsize=None)
def load_vm_runtime() -> VMRuntime:
    """Compile (cached), load and initialize the VM runtime; the same object on every call."""
    path = compile_c(runtime_c_source(), flags=RUNTIME_FLAGS, name_hint="kiln_vm_runtime")
    module = tvm_ffi.load_module(str(path))
    fmt, abi, names = module.get_function("kiln_vm_init")()
    versions = (int(fmt), int(abi))
    if versions != (VM_FORMAT_VERSION, ABI_VERSION):
        raise KilnError(
            f"the kiln VM runtime at {path} has format/ABI versions {versions}, this kiln expects "
            f"{(VM_FORMAT_VERSION, ABI_VERSION)}; clear the kiln cache directory"
        )
    # NOTE: compiled-mode code calls builtins by their index in BUILTINS (`builtin_index`).
    if tuple(str(n) for n in names) != tuple(b.name for b in BUILTINS):
        raise KilnError(
            f"the kiln VM runtime at {path} lists its builtins in another order than "
            "kiln/runtime/vm_builtins.py BUILTINS; the two tables must match"
        )
    return VMRuntime(module, path, tvm_ffi.get_global_func("kiln.vm.create"))
