"""Attribute keys and constants of the tensor level, defined once.

Function attributes (``PrimFunc.attrs``), statement attribute keys (``AttrStmt.attr_key``) and
loop annotations that more than one pass, analysis or code generator reads live here, so a key
is spelled in one place and a reader finds every user by grepping its name.
"""

from __future__ import annotations

# -- function attributes ----------------------------------------------------------------------
GLOBAL_SYMBOL = "global_symbol"
"""The exported name of a function; a function without one is private to its module."""
TARGET = "target"
"""The `Target` a function is compiled for (`BindTarget`)."""
CALLING_CONV = "calling_conv"
"""How a function is called: `DEVICE_SUBROUTINE` (a plain call) or `KERNEL_LAUNCH`."""
NOALIAS = "tir.noalias"
"""The function's buffer arguments never overlap (TE lowering promises it; C gets ``restrict``)."""
IS_GLOBAL_FUNC = "tir.is_global_func"
"""A device kernel entry (``__global__``)."""
KERNEL_LAUNCH_PARAMS = "tir.kernel_launch_params"
"""The thread tags a kernel launch passes extents for, in order (then `USE_DYN_SHARED_MEMORY`)."""
USE_DYN_SHARED_MEMORY = "tir.use_dyn_shared_memory"
"""Last launch parameter of a kernel with a ``shared.dyn`` allocation: its size in bytes."""
NO_ERROR = "kiln.no_error"
"""The function never raises (no assert, no fallible call or allocation): its callers do not
check for an error (`OutlineParallelLoops` sets it; the C emitter refuses an error exit in it)."""
PACKED_API = "kiln.packed_api"
"""The `kiln.tir.packed_api.PackedAPI` entry plan of an exposed function (`MakePackedAPI`)."""

# -- calling conventions ------------------------------------------------------------------------
DEVICE_SUBROUTINE = 0
"""``calling_conv`` of a plain function (a ``__device__`` subroutine on a device target)."""
KERNEL_LAUNCH = 2
"""``calling_conv`` of a kernel launched from the host, never called through tvm-ffi."""

# -- statement attributes -----------------------------------------------------------------------
THREAD_EXTENT = "thread_extent"
"""``AttrStmt(iter_var, THREAD_EXTENT, n)``: the body runs on ``n`` threads of the var's tag."""
VIRTUAL_THREAD = "virtual_thread"
DEVICE_REGION = "target"
"""``AttrStmt(device_target, DEVICE_REGION, 0, region)``: a region to split into a kernel."""
THREAD_ATTRS = (THREAD_EXTENT, VIRTUAL_THREAD)

# -- buffer / allocation annotations --------------------------------------------------------------
STACK_ALLOC_BYTES = 16384
"""A host allocation of constant size up to this many bytes lives on the C stack; a larger or
symbolic one is heap memory, whose allocation can fail (an error exit)."""
VOLATILE = "tir.volatile"
"""An allocation whose accesses must not be merged or reordered."""

# -- loop annotations -----------------------------------------------------------------------------
EXPLICIT_VECTOR = "pragma_explicit_vector"
"""A vectorized loop to rewrite into straight-line vector code (`VectorizeLoop`)."""
PARALLEL_GRAIN = "pragma_parallel_grain"
"""On a parallel loop of symbolic trip count: the trip count (an int) below which the loop is not
worth threads; the C emitter passes it to kiln's thread pool (or prints OpenMP's
``if(extent >= grain)`` clause), so the loop then runs on the calling thread alone (the
schedules of `kiln.topi` set it)."""

WEAK_SYMBOL = "kiln.weak_symbol"
"""PrimFunc attribute: its exported entry is a weak symbol, so a kernel that two linked objects
define links once (`kiln.driver.kernel_cache`)."""
