"""Default CPU schedules chosen by operator pattern: `schedule_for` and `build_op`.

`schedule_for(outputs)` makes a `te.Schedule` for the graph that computes ``outputs`` in four
steps:

1. every injective compute that is not an output is inlined into its readers (element-wise
   prologues and epilogues cost no memory traffic), except those marked ``attrs["no_inline"]``
   (small per-row or per-channel values such as ``1/sqrt(var)``, whose math would otherwise be
   repeated for every element and keep the loop scalar);
2. the *anchors* (computes whose pattern is above injective), consumers first, get the schedule
   registered for their tag (`register_schedule`), or the generic reduction schedule;
3. the remaining injective stages (outputs, ``no_inline`` ones) get the injective schedule;
4. anything else keeps TE's default (serial loops).

For a CUDA target, steps 2-4 are replaced by `kiln.topi.cuda.schedule_graph`, which binds every
remaining stage to blocks and threads.

Schedules for other operator families (dense, conv2d in `kiln.topi.x86`) plug in with
``@register_schedule("<tag>")``: the function receives the schedule, the anchor tensor and a
`ScheduleContext`, and marks the stages it placed in ``ctx.done``.
"""

from __future__ import annotations

from typing import Any

import kiln.topi.generic  # noqa: F401  (registers the schedules of the nn operators)
from kiln.errors import IRError, IRValueError
from kiln.ir.target import Target
from kiln.te import ComputeOp, Schedule, Stage, Tensor, create_schedule
from kiln.topi.cuda import is_cuda_target, schedule_graph
from kiln.topi.generic.common import SCHEDULES, ScheduleContext, register_schedule
from kiln.topi.generic.injective import schedule_injective
from kiln.topi.generic.reduction import schedule_reduce
from kiln.topi.tag import Pattern, is_injective, pattern_of

__all__ = ["register_schedule", "schedule_for", "stages_of"]


def _as_tensors(outputs: Any) -> list[Tensor]:
    items = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    if not items:
        raise IRValueError("schedule_for: needs at least one output tensor")
    for t in items:
        if not isinstance(t, Tensor) or not isinstance(t.op, ComputeOp):
            raise IRError(f"schedule_for: outputs must be computed te.Tensors, got {t!r}")
    return items


def _inline_injective(sch: Schedule) -> None:
    for stage in sch.stages:
        op = stage.op
        if stage.is_output or not isinstance(op, ComputeOp) or op.reduce_axis:
            continue
        if is_injective(op) and not op.attrs.get("no_inline"):
            stage.compute_inline()


def _schedule_anchors(sch: Schedule, ctx: ScheduleContext) -> None:
    for stage in reversed(list(sch.stages)):
        op = stage.op
        if stage in ctx.done or not isinstance(op, ComputeOp) or stage.is_inlined:
            continue
        fn = SCHEDULES.get(op.tag)
        if fn is not None:
            fn(sch, op.output(0), ctx)
        elif is_injective(op) and not op.reduce_axis:
            continue
        elif pattern_of(op) == Pattern.COMM_REDUCE or op.reduce_axis:
            schedule_reduce(sch, op.output(0), ctx)
        ctx.done.add(stage)


def _schedule_rest(sch: Schedule, ctx: ScheduleContext) -> None:
    for stage in list(sch.stages):
        op = stage.op
        if stage in ctx.done or stage.is_inlined or not isinstance(op, ComputeOp):
            continue
        if stage.attach_type == "root" and not op.reduce_axis:
            schedule_injective(sch, op.output(0), ctx)
        ctx.done.add(stage)


def schedule_for(outputs: Any, target: Any = "c") -> Schedule:
    """The default schedule computing ``outputs`` (one tensor or a list), chosen by pattern;
    ``target`` is a target string or `kiln.ir.Target` (the default ``c`` is the host CPU), and
    every vector width and register tile the schedule picks is its."""
    outs = _as_tensors(outputs)
    sch = create_schedule(outs)
    ctx = ScheduleContext(Target.from_any(target), outputs=[sch[t] for t in outs])
    _inline_injective(sch)
    if is_cuda_target(ctx.target):
        schedule_graph(sch, ctx)
        return sch
    _schedule_anchors(sch, ctx)
    _schedule_rest(sch, ctx)
    return sch


def stages_of(sch: Schedule) -> list[Stage]:
    """The stages of ``sch`` that own loops (for tests and debugging)."""
    return [s for s in sch.stages if isinstance(s.op, ComputeOp) and not s.is_inlined]
