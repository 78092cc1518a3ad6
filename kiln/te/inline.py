"""Effective bodies: each stage's expression with inlined stages substituted in.

A read ``B[e0, e1]`` of an inlined stage ``B`` becomes B's (already expanded) body with B's axes
replaced by ``e0, e1``. What remains reads only stages that own a buffer. Lowering and bound
inference work on these bodies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.ir.visitor import pre_order_nodes
from kiln.te.rewrite import rewrite_loads, substitute_axes
from kiln.te.tensor import ComputeOp, ProducerLoad
from kiln.tir.expr import PrimExpr

if TYPE_CHECKING:
    from kiln.te.schedule import Schedule, Stage


def effective_bodies(sch: Schedule) -> dict[Stage, PrimExpr]:
    """The expanded body of every compute stage (inlined ones included), producers first."""
    bodies: dict[Stage, PrimExpr] = {}
    for stage in sch.stages:
        op = stage.op
        if not isinstance(op, ComputeOp):
            continue

        def expand(load: ProducerLoad) -> PrimExpr:
            src = sch.stage_map[load.producer.op]
            if not src.is_inlined:
                return load
            axes = src.op.axis  # type: ignore[attr-defined]
            return substitute_axes(bodies[src], dict(zip(axes, load.indices)))

        bodies[stage] = rewrite_loads(op.body, expand)
    return bodies


def loads_in(expr: Any) -> list[ProducerLoad]:
    """Every tensor read in ``expr``, in pre-order."""
    return [n for n in pre_order_nodes(expr) if isinstance(n, ProducerLoad)]


def buffer_readers(sch: Schedule, bodies: dict[Stage, PrimExpr]) -> dict[Stage, list[Stage]]:
    """For each stage, the non-inlined stages whose effective body reads it."""
    readers: dict[Stage, list[Stage]] = {s: [] for s in sch.stages}
    for stage, body in bodies.items():
        if stage.is_inlined:
            continue
        for load in loads_in(body):
            src = sch.stage_map[load.producer.op]
            if stage not in readers[src]:
                readers[src].append(stage)
    return readers
