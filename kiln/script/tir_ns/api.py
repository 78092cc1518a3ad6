"""The statement-level functions of the T namespace (loops, frames, buffers, attributes).

Each returns inert data (a frame, spec or loop description) that the parser turns into IR; see
`kiln.script.tir_ns.frames` for the IR each one produces.
"""

from __future__ import annotations

from typing import Any

from kiln.errors import IRError
from kiln.script.tir_ns.frames import (
    AllocateFrame,
    AssertFrame,
    AttrFrame,
    BufferFrame,
    EnvThreadSpec,
    FuncAttrs,
    GridSpec,
    LaunchThreadFrame,
    LetFrame,
    LoopSpec,
    MatchBufferSpec,
)
from kiln.script.tir_ns.types import BufferSpec
from kiln.tir.stmt import ForKind


def serial(start: Any, stop: Any = None, *, annotations: Any = None) -> LoopSpec:
    """``for i in T.serial(n)`` / ``T.serial(lo, hi)``: an ordinary loop."""
    return LoopSpec(ForKind.SERIAL, start, stop, None, annotations)


def parallel(start: Any, stop: Any = None, *, annotations: Any = None) -> LoopSpec:
    """A loop whose iterations run on parallel CPU threads."""
    return LoopSpec(ForKind.PARALLEL, start, stop, None, annotations)


def vectorized(start: Any, stop: Any = None, *, annotations: Any = None) -> LoopSpec:
    """A loop executed as SIMD lanes."""
    return LoopSpec(ForKind.VECTORIZED, start, stop, None, annotations)


def unroll(start: Any, stop: Any = None, *, annotations: Any = None) -> LoopSpec:
    """A loop to unroll."""
    return LoopSpec(ForKind.UNROLLED, start, stop, None, annotations)


def thread_binding(
    start: Any, stop: Any = None, thread: Any = None, *, annotations: Any = None
) -> LoopSpec:
    """``T.thread_binding(n, "threadIdx.x")``: a loop bound to a GPU thread index."""
    if thread is None and isinstance(stop, str):
        thread, stop = stop, None
    if not isinstance(thread, str):
        raise IRError('T.thread_binding needs a thread tag such as "threadIdx.x"')
    return LoopSpec(ForKind.THREAD_BINDING, start, stop, thread, annotations)


def grid(*extents: Any) -> GridSpec:
    """``for i, j in T.grid(m, n)``: nested serial loops from 0."""
    if not extents:
        raise IRError("T.grid needs at least one extent")
    return GridSpec(tuple(extents))


def LetStmt(value: Any, type_annotation: Any = None, *, var: Any = None) -> LetFrame:  # noqa: N802
    """``with T.LetStmt(value, var=v):`` binds ``v`` to ``value`` in the block."""
    return LetFrame(value, type_annotation, var=var)


def Assert(condition: Any, message: Any) -> AssertFrame:  # noqa: N802
    """``with T.Assert(cond, "message"):`` checks ``cond`` at run time before the block."""
    return AssertFrame(condition, message)


def attr(node: Any, attr_key: str, value: Any) -> AttrFrame:
    """``with T.attr(node, "key", value):`` annotates the block."""
    return AttrFrame(node, attr_key, value)


def launch_thread(thread: Any, extent: Any) -> LaunchThreadFrame:
    """``tx = T.launch_thread("threadIdx.x", n)``: the rest of the block runs on n threads."""
    return LaunchThreadFrame(thread, extent)


def env_thread(thread_tag: str, dtype: Any = "int32") -> EnvThreadSpec:
    """``tx = T.env_thread("threadIdx.x")``: a thread index for ``T.attr`` / ``launch_thread``."""
    return EnvThreadSpec(thread_tag, dtype)


def allocate(
    extents: Any,
    dtype: Any,
    scope: Any = "global",
    condition: Any = None,
    annotations: Any = None,
) -> AllocateFrame:
    """``p = T.allocate([n], "float32", "shared")``: memory for the block; binds the pointer."""
    return AllocateFrame(extents, dtype, scope, condition, annotations)


def alloc_buffer(*args: Any, **kwargs: Any) -> BufferFrame:
    """``A = T.alloc_buffer(shape, dtype, scope=...)``: allocate and declare a buffer."""
    return BufferFrame(BufferSpec("T.alloc_buffer", args, kwargs), allocate=True)


def decl_buffer(*args: Any, **kwargs: Any) -> BufferFrame:
    """``A = T.decl_buffer(shape, dtype, data=p)``: declare a buffer (allocated without data=)."""
    return BufferFrame(BufferSpec("T.decl_buffer", args, kwargs), allocate=None)


def match_buffer(param: Any, *args: Any, **kwargs: Any) -> MatchBufferSpec:
    """``A = T.match_buffer(a, shape, dtype)``: the buffer a handle parameter carries."""
    return MatchBufferSpec(param, BufferSpec("T.match_buffer", args, kwargs))


def func_attr(attrs: Any) -> FuncAttrs:
    """``T.func_attr({...})``: attributes of the enclosing function."""
    return FuncAttrs(attrs)
