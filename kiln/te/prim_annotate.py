"""Schedule primitives that mark how a leaf loop runs: ``parallel``, ``vectorize``, ``unroll``,
``bind`` and ``pragma``.

Preconditions (each raises `IRError` naming the stage and axis):
- the axis is a current leaf of the stage (see `prim_loops.leaf_index`);
- ``parallel``, ``vectorize`` and ``bind`` need a data-parallel axis: running a reduction axis
  in parallel or as SIMD lanes would race on the accumulator;
- an axis takes one kind: marking a parallel axis vectorized (or bound) is an error; repeating
  the same mark is allowed;
- ``bind`` takes ``blockIdx.x/y/z`` or ``threadIdx.x/y/z`` (as a string or a `thread_axis`), and
  a stage binds each tag at most once;
- ``pragma`` needs a non-empty string key;
- ``prefetch`` needs a tensor the stage reads and an integer offset.
Constant extents for vectorized loops are checked when the schedule is lowered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.errors import IRError, IRValueError
from kiln.te.prim_loops import leaf_index
from kiln.tir.expr import Var
from kiln.tir.stmt import ForKind, IterKind, IterVar

if TYPE_CHECKING:
    from kiln.te.schedule import Stage

THREAD_TAGS = tuple(f"{k}.{d}" for k in ("blockIdx", "threadIdx") for d in "xyz")


def _check_data_par(stage: Stage, axis: Any, prim: str) -> None:
    if axis.is_reduce:
        raise IRValueError(
            f"{prim}: axis {axis.name!r} of stage {stage.name!r} is a reduction axis; "
            f"running it with {prim} would race on the accumulator "
            "(use a data-parallel axis instead, or unroll this one)"
        )


def set_kind(stage: Stage, axis: Any, kind: ForKind, prim: str) -> None:
    """Mark leaf ``axis`` with loop ``kind`` (parallel / vectorized / unrolled)."""
    leaf_index(stage, axis, prim)
    if kind is not ForKind.UNROLLED:
        _check_data_par(stage, axis, prim)
    attr = stage.attr(axis)
    if attr.kind not in (ForKind.SERIAL, kind):
        current = f"bound to {attr.thread_tag}" if attr.thread_tag else f"{attr.kind.value}"
        raise IRValueError(
            f"{prim}: axis {axis.name!r} of stage {stage.name!r} is already {current}; "
            "a loop runs one way (serial, parallel, vectorized, unrolled or bound to a thread)"
        )
    attr.kind = kind


def thread_axis(tag: str, name: str = "") -> IterVar:
    """A GPU thread index to `bind` to: ``thread_axis("threadIdx.x")``."""
    _check_tag(tag, "thread_axis")
    return IterVar(None, Var(name or tag.replace(".", "_")), IterKind.THREAD_INDEX, tag)


def _check_tag(tag: Any, prim: str) -> str:
    if tag not in THREAD_TAGS:
        raise IRValueError(
            f"{prim}: unknown thread tag {tag!r}; expected one of {list(THREAD_TAGS)}"
        )
    return str(tag)


def bind(stage: Stage, axis: Any, thread: Any) -> None:
    """Bind leaf ``axis`` to the GPU thread index ``thread`` (a tag or a `thread_axis`)."""
    leaf_index(stage, axis, "bind")
    _check_data_par(stage, axis, "bind")
    tag = thread.thread_tag if isinstance(thread, IterVar) else thread
    tag = _check_tag(tag, "bind")
    for other, attr in stage.iter_attrs.items():
        if attr.thread_tag == tag and other is not axis and other in stage.leaf_iter_vars:
            raise IRValueError(
                f"bind: {tag} is already bound to axis {other.name!r} of stage {stage.name!r}"
            )
    set_kind(stage, axis, ForKind.THREAD_BINDING, "bind")
    stage.attr(axis).thread_tag = tag


def pragma(stage: Stage, axis: Any, key: Any, value: Any) -> None:
    """Record loop annotation ``pragma_<key> = value`` on leaf ``axis``."""
    leaf_index(stage, axis, "pragma")
    if not isinstance(key, str) or not key:
        raise IRError(f"pragma: the key must be a non-empty string, got {key!r}")
    full = key if key.startswith("pragma_") else f"pragma_{key}"
    stage.attr(axis).pragmas[full] = value


def prefetch(stage: Stage, tensor: Any, axis: Any, offset: Any) -> None:
    """Record a prefetch of ``tensor`` ``offset`` iterations ahead at leaf ``axis``."""
    leaf_index(stage, axis, "prefetch")
    op = stage.op
    inputs = getattr(op, "input_tensors", ())
    if not any(getattr(tensor, "op", None) is t.op for t in inputs):
        names = sorted({t.op.name for t in inputs})
        raise IRValueError(
            f"prefetch: stage {stage.name!r} does not read {getattr(tensor, 'name', tensor)!r}; "
            f"it reads {names}"
        )
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise IRValueError(f"prefetch: the offset must be an integer, got {offset!r}")
    stage.prefetches.append((tensor, axis, offset))
