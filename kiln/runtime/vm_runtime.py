"""kiln's runtime library: the VM (builtins, interpreter) and the thread pool, in C.

Its C is two translation units (`runtime_units`): kiln/runtime/vm_c/{anylist.h, common.h,
builtins.c, checks.c, interp.c, vm.c} concatenated, and kiln/runtime/thread_pool.c. Every
library `export_library` writes links both (docs/architecture.md, "the artifact is closed"), so
it exports ``kiln_vm_init``, ``__kiln_vm_info`` and ``__kiln_thread_pool`` beside its kernels.

`load_vm_runtime(library)` returns the process's runtime, the same object on every call: the
first runtime the process needs stays loaded for its life, and only that one is initialized, so
the registered globals (every ``vm.builtin.*`` and ``kiln.vm.create``) and the thread pool are
one per process. That first runtime is

- the copy inside ``library`` (an exported model) when it carries one: loading needs no C
  compiler and no cache;
- else compiled with kiln's cached toolchain (a machine's first use only).

A library carrying a copy the process does not use is only checked: the copy must implement
the same VM format, ABI and builtin table (and pool ABI) as this kiln, else the library was
exported by another kiln and is refused by name.
NOTE: one pool per process, not one per library: every pool keeps ``threads - 1`` workers that
spin after a job, so a process running two models on per-library pools would run twice as many
threads as CPUs, and the two models' kernels would preempt each other's workers.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tvm_ffi

from kiln import config
from kiln.errors import KilnError
from kiln.runtime.parallel_build import compile_units
from kiln.runtime.vm_builtins import BUILTINS
from kiln.runtime.vm_format import VM_FORMAT_VERSION

RUNTIME_DIR = Path(__file__).parent
C_DIR = RUNTIME_DIR / "vm_c"
C_PARTS = ("anylist.h", "common.h", "builtins.c", "checks.c", "interp.c", "vm.c")
"""The VM's C fragments, in the order they are concatenated into one translation unit."""
POOL_SOURCE = RUNTIME_DIR / "thread_pool.c"

RUNTIME_FLAGS = ("-O2", "-pthread", "-fPIC", "-shared")
"""Portable flags for the compiled runtime: it has no hot loops that -march would help."""

ABI_VERSION = 2
"""`KILN_VM_ABI_VERSION` of anylist.h that this Python code was written against."""
POOL_ABI_VERSION = 1
"""`KILN_POOL_ABI_VERSION` of thread_pool.c (the layout of its `KilnPoolApi` table)."""

INFO_FUNC = "__kiln_vm_info"
INIT_FUNC = "kiln_vm_init"
POOL_FUNC = "__kiln_thread_pool"
"""The exports of the runtime's C (see the module docstring)."""


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as e:
        raise KilnError(
            f"kiln's runtime C source {path} cannot be read ({e.strerror}): this kiln "
            "installation is incomplete; reinstall kiln (its wheel ships every file of "
            "kiln/runtime/vm_c and kiln/runtime/thread_pool.c)"
        ) from e


def runtime_c_source() -> str:
    """The C source of the VM (one translation unit)."""
    return "\n".join(_read(C_DIR / part) for part in C_PARTS)


def runtime_units() -> tuple[str, str]:
    """The translation units of kiln's runtime library: the VM, then the thread pool."""
    return runtime_c_source(), _read(POOL_SOURCE)


RANGE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
"""A parallel loop body: ``fn(ctx, begin, end)``."""


class _PoolApi(ctypes.Structure):
    """`KilnPoolApi` of thread_pool.c."""

    _fields_ = [
        ("abi_version", ctypes.c_int64),
        ("init", ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_int64)),
        ("threads", ctypes.CFUNCTYPE(ctypes.c_int)),
        ("run", ctypes.c_void_p),
    ]


_RUN = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)


@dataclass(frozen=True)
class ThreadPool:
    """One copy of kiln's thread pool, reached through its `KilnPoolApi` table (the library
    holding it must stay loaded: `VMRuntime` keeps it)."""

    api: Any

    @property
    def run_address(self) -> int:
        """The address of ``kiln_pool_run`` (what kernels get from ``kiln.runtime.thread_pool``)."""
        return int(self.api.run)

    def threads(self) -> int:
        """The threads a parallel loop runs on, the caller included."""
        return int(self.api.threads())

    def run(self, n: int, grain: int, fn: Any, ctx: int = 0) -> None:
        """Run ``fn(ctx, begin, end)`` (a `RANGE_FN`) over ``[0, n)`` on the pool."""
        _RUN(self.run_address)(n, grain, fn, ctx)


@dataclass(frozen=True)
class VMRuntime:
    """The process's runtime: the library holding it, the VM constructor and the thread pool."""

    module: tvm_ffi.Module
    path: Path
    create: tvm_ffi.Function
    pool: ThreadPool


_REEXPORT = "re-export it with this kiln"
_lock = threading.Lock()
_process: VMRuntime | None = None


def carries_runtime(ffi: tvm_ffi.Module) -> bool:
    """Whether the library ``ffi`` links its own copy of the runtime (an exported model)."""
    return all(ffi.implements_function(f) for f in (INFO_FUNC, INIT_FUNC, POOL_FUNC))


def load_vm_runtime(library: Any = None) -> VMRuntime:
    """The process's runtime (see the module docstring); ``library`` (a kiln `Module` or a
    tvm-ffi module) is the one about to run, whose own copy is used when the process has none
    yet and checked otherwise."""
    global _process
    ffi = getattr(library, "ffi_module", library)
    path = Path(getattr(library, "path", "") or "<library>")
    carried = ffi is not None and carries_runtime(ffi)
    with _lock:
        if _process is None:
            if carried:
                _process = _start(ffi, path, _REEXPORT)
            else:
                _process = _start(*_compiled(library, path), "clear the kiln cache directory")
        elif carried:
            _check(ffi, ffi.get_function(INFO_FUNC)(), path, _REEXPORT)
        return _process


def _compiled(library: Any, path: Path) -> tuple[tvm_ffi.Module, Path]:
    try:
        lib, _, _ = compile_units(runtime_units(), flags=RUNTIME_FLAGS, name_hint="kiln_runtime")
    except KilnError as e:
        if library is None:
            raise
        raise KilnError(
            f"{path} carries no kiln runtime (exported by an older kiln, or not by "
            f"export_library), and the runtime cannot be compiled here: {e}. Re-export it with "
            "this kiln"
        ) from e
    return tvm_ffi.load_module(str(lib)), lib


def _start(ffi: tvm_ffi.Module, path: Path, fix: str) -> VMRuntime:
    """Check, initialize and keep the runtime in ``ffi`` (its globals, its pool)."""
    api = _check(ffi, ffi.get_function(INFO_FUNC)(), path, fix)
    ffi.get_function(INIT_FUNC)()
    api.init(config.pool_threads(), int(config.pool_spin_us() * 1000))
    return VMRuntime(ffi, path, tvm_ffi.get_global_func("kiln.vm.create"), ThreadPool(api))


def _check(ffi: tvm_ffi.Module, info: Any, path: Path, fix: str) -> Any:
    """The pool table of the runtime in ``ffi`` after checking that it is this kiln's."""
    fmt, abi, names = info
    api = _PoolApi.from_address(int(ffi.get_function(POOL_FUNC)()))
    versions = (int(fmt), int(abi), int(api.abi_version))
    expected = (VM_FORMAT_VERSION, ABI_VERSION, POOL_ABI_VERSION)
    if versions != expected:
        raise KilnError(
            f"the kiln runtime in {path} has VM format/ABI/pool versions {versions}, this kiln "
            f"expects {expected}; {fix}"
        )
    # NOTE: compiled-mode code calls builtins by their index in BUILTINS (`builtin_index`).
    if tuple(str(n) for n in names) != tuple(b.name for b in BUILTINS):
        raise KilnError(
            f"the kiln runtime in {path} lists its builtins in another order than "
            f"kiln/runtime/vm_builtins.py BUILTINS; {fix}"
        )
    return api
