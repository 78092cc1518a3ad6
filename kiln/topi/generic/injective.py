"""The default CPU schedule of an injective (element-wise, broadcast, data-movement) stage.

The loops are fused and split so that the innermost loop runs over ``lanes`` consecutive
elements of the last axis (vectorized) and one outer loop covers everything else (parallel when
the stage is big enough):

- last extent a multiple of ``lanes``: ``fuse(outer axes, last_outer)`` / ``last_inner``, so no
  index division happens inside the vector loop;
- last extent smaller than ``lanes`` with a total that is a multiple of ``lanes``: every axis is
  fused and split by ``lanes`` (the division by constant extents is cheap and the vector loop
  has no tail); with a symbolic first axis (a batch) whose entries are whole vectors, the other
  axes are, and the batch is fused with the outer part;
- otherwise: ``fuse(outer axes)`` / ``last_outer`` / ``last_inner`` with a guarded tail; a
  constant last extent has ``last_outer`` partitioned (`kiln.tir.transform.LoopPartition`), so
  only the row's last vector is guarded (Swin's mask added to rows of 49: 10% of its bound).

A stage that is (or inlines, at its own shape) a concat along an axis other than the last
(`kiln.topi.transform.concatenate` records ``concat_axis``) keeps that axis a serial loop of its
own, partitioned where the operand read changes (`kiln.tir.transform.LoopPartition`): each
operand is then a plain vectorized copy instead of a chain of conditions per element
(DenseNet's block concat of 24 operands: a 4 ms kernel).

The outer loop runs in parallel when the stage is worth threads (`parallelize`, at
`NS_PER_ELEMENT` per element; a symbolic shape gets a run-time grain).
"""

from __future__ import annotations

from kiln.te import AxisVar, Schedule, Stage, Tensor
from kiln.tir.transform.loop_partition import SPLIT
from kiln.topi.generic.common import (
    NS_PER_ELEMENT,
    PARTITION,
    ScheduleContext,
    extent,
    fuse_all,
    inner_points,
    num_elements,
    parallelize,
    vector_split,
)
from kiln.topi.utils import same_shape


def _batch_rows(axes: list[AxisVar], lanes: int) -> bool:
    """Whether only the first axis (a batch) is symbolic and the others hold a multiple of
    ``lanes`` elements: each batch entry is then whole vectors."""
    rest = num_elements(axes[1:])
    return len(axes) > 1 and extent(axes[0]) is None and rest is not None and rest % lanes == 0


def concat_axis(sch: Schedule, t: Tensor) -> int | None:
    """The axis of a concat that ``t`` is, or inlines at its own shape, else None."""
    op = t.op
    axis = (getattr(op, "attrs", None) or {}).get("concat_axis")
    if axis is not None:
        return axis
    for src in op.input_tensors:
        if sch[src].is_inlined and same_shape(src, t.shape):
            found = concat_axis(sch, src)
            if found is not None:
                return found
    return None


def _by_operand(stage: Stage, axes: list[AxisVar], ax: int, lanes: int) -> AxisVar | None:
    """Split the loops at the concat axis ``ax`` (see the module docstring), the axes inside
    it being whole vectors; returns the loop outside it (None: there is none)."""
    inner = fuse_all(stage, axes[ax + 1 :])
    assert inner is not None
    vector_split(stage, inner, lanes)
    stage.pragma(axes[ax], PARTITION, SPLIT)
    return fuse_all(stage, axes[:ax])


def _parallel_outer(stage: Stage, outer: AxisVar | None, total: int | None) -> None:
    if outer is not None:
        per_iter = inner_points(stage, outer) * NS_PER_ELEMENT
        parallelize(stage, outer, total, NS_PER_ELEMENT, per_iter)


def schedule_injective(sch: Schedule, t: Tensor, ctx: ScheduleContext) -> None:
    """Vectorize the last axis of ``t``'s stage and parallelize the rest (see module docstring)."""
    stage = sch[t]
    axes = list(stage.op.axis)
    if not axes:
        return
    lanes = ctx.lanes(t.dtype)
    total = num_elements(axes)
    ax = concat_axis(sch, t)
    if ax is not None and ax < len(axes) - 1 and extent(axes[ax]) is not None:
        inner = num_elements(axes[ax + 1 :])
        if inner is not None and inner % lanes == 0:
            _parallel_outer(stage, _by_operand(stage, axes, ax, lanes), total)
            ctx.done.add(stage)
            return
    last = extent(axes[-1])
    if last is not None and last % lanes == 0:
        lo, li = stage.split(axes[-1], factor=lanes)
        outer = fuse_all(stage, [*axes[:-1], lo])
    elif last is not None and last < lanes and total is not None and total % lanes == 0:
        outer, li = stage.split(fuse_all(stage, axes), factor=lanes)
    elif last is not None and last < lanes and _batch_rows(axes, lanes):
        rows, li = stage.split(fuse_all(stage, axes[1:]), factor=lanes)
        outer = stage.fuse(axes[0], rows)
    elif last is not None and last < lanes:
        # a short ragged row: vectorizing it would be all tail
        outer, li = fuse_all(stage, axes[:-1]), None
    else:
        lo, li = vector_split(stage, axes[-1], lanes), None
        head = fuse_all(stage, axes[:-1])
        outer = head if head is not None else lo
    if li is not None:
        stage.vectorize(li)
    _parallel_outer(stage, outer, total)
    ctx.done.add(stage)
