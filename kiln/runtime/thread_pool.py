"""kiln's thread pool for parallel loops: one per process, shared by every kernel library.

Generated C runs a parallel loop whose body cannot raise through the pool (`kiln_pool_run` in
thread_pool.c, the design is in that file's header): the caller works on the loop itself and
never waits for a worker that has not started, so a busy machine does not make a parallel
kernel slower than a serial one; an idle worker spins for `config.pool_spin_us` microseconds
before it sleeps, so the kernels of one model call find it awake.

A kernel library finds the pool through the global tvm-ffi function ``kiln.runtime.thread_pool``
(registered when this module is imported), which compiles thread_pool.c once (kiln's cached
toolchain), loads it for the life of the process and returns the address of `kiln_pool_run`; the
library keeps that address. A library loaded where the function is not registered, or where the
pool cannot be built, runs its parallel loops on the calling thread.
"""

from __future__ import annotations

import ctypes
import functools
from pathlib import Path

import tvm_ffi

from kiln import config
from kiln.runtime.toolchain import compile_c

GLOBAL_NAME = "kiln.runtime.thread_pool"
"""The tvm-ffi global a kernel library calls (no arguments) for the address of `kiln_pool_run`."""

POOL_FLAGS = ("-O2", "-pthread", "-fPIC", "-shared")


@functools.lru_cache(maxsize=None)
def pool_library() -> ctypes.CDLL:
    """Compile (cached), load and size the pool; the same library on every call."""
    path = compile_c(
        (Path(__file__).parent / "thread_pool.c").read_text(),
        flags=POOL_FLAGS,
        name_hint="kiln_thread_pool",
    )
    lib = ctypes.CDLL(str(path))
    lib.kiln_pool_init.argtypes = (ctypes.c_int, ctypes.c_int64)
    lib.kiln_pool_init.restype = None
    lib.kiln_pool_threads.restype = ctypes.c_int
    lib.kiln_pool_init(config.pool_threads(), int(config.pool_spin_us() * 1000))
    return lib


def pool_threads() -> int:
    """The threads the pool runs a parallel loop on (the caller included)."""
    return int(pool_library().kiln_pool_threads())


def _entry() -> int:
    return ctypes.cast(pool_library().kiln_pool_run, ctypes.c_void_p).value or 0


tvm_ffi.register_global_func(GLOBAL_NAME, _entry, override=True)
