"""kiln's thread pool for parallel loops: one per process, shared by every kernel library.

Generated C runs a parallel loop whose body cannot raise through the pool (`kiln_pool_run` in
thread_pool.c, the design is in that file's header): the caller works on the loop itself and
never waits for a worker that has not started, so a busy machine does not make a parallel
kernel slower than a serial one; an idle worker spins for `config.pool_spin_us` microseconds
before it sleeps, so the kernels of one model call find it awake.

The pool is part of kiln's runtime library (`kiln.runtime.vm_runtime`): the process's pool is
the one of the process's runtime, the copy inside the first exported model it loads, or else the
compiled one. A kernel library finds it through the global tvm-ffi function
``kiln.runtime.thread_pool`` (registered when this module is imported; no arguments), which
returns the address of `kiln_pool_run`; the library keeps that address. A thread may cap
the threads of the loops it starts (`call_threads_function`: a model's ``num_threads``).
When the process has no pool and cannot get one (no C compiler and no exported model loaded,
or an incomplete installation), the function warns (`RuntimeWarning`, naming why) and the
library runs its parallel loops on the calling thread.
"""

from __future__ import annotations

import warnings

import tvm_ffi

from kiln.errors import KilnError
from kiln.runtime.vm_runtime import ThreadPool, load_vm_runtime

GLOBAL_NAME = "kiln.runtime.thread_pool"
"""The tvm-ffi global a kernel library calls (no arguments) for the address of `kiln_pool_run`."""


def process_pool() -> ThreadPool:
    """The process's thread pool (see the module docstring)."""
    return load_vm_runtime().pool


def pool_threads() -> int:
    """The threads the pool runs a parallel loop on (the caller included)."""
    return process_pool().threads()


CALL_THREADS_FUNC = "__kiln_pool_call_threads"
"""The runtime's function that caps the threads of the calling thread's jobs (thread_pool.c)."""


def call_threads_function() -> tvm_ffi.Function | None:
    """``f(n) -> previous``: cap the parallel loops the calling thread starts at ``n`` threads
    (the caller included; 0: no cap), returning the cap before. None when the process's pool is
    the copy of a model exported before kiln had it (then loops use the whole pool)."""
    module = load_vm_runtime().module
    if not module.implements_function(CALL_THREADS_FUNC):
        return None
    return module.get_function(CALL_THREADS_FUNC)


def _entry() -> int:
    try:
        return process_pool().run_address
    except KilnError as e:
        warnings.warn(
            f"kiln's thread pool is unavailable, so parallel loops run on one thread: {e}",
            RuntimeWarning,
            stacklevel=1,
        )
        return 0


tvm_ffi.register_global_func(GLOBAL_NAME, _entry, override=True)
