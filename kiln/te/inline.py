"""Effective bodies: each stage's expression with inlined stages substituted in.

A read ``B[e0, e1]`` of an inlined stage ``B`` becomes B's (already expanded) body with B's axes
replaced by ``e0, e1``. What remains reads only stages that own a buffer. Lowering and bound
inference work on these bodies.

A read whose index divides by a symbolic dim (reshapes and transposes over ``seq``: the
flat index ``((b*2 + h)*16 + d)*seq + s`` unravelled by ``// seq``, ``% 16``...) is simplified
under the ranges of the stage's axes, where ``s < seq`` is still known (`kiln.arith.symbolic`),
so it reads ``[b, s, h*16 + d]``; once the loops are split, ``s`` is ``o*8 + j`` and the bound
is lost.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from kiln.arith import Analyzer
from kiln.ir.visitor import distinct_nodes
from kiln.te.rewrite import rewrite_loads, substitute_axes
from kiln.te.tensor import ComputeOp, ProducerLoad
from kiln.tir.expr import Div, FloorDiv, FloorMod, IntImm, Mod, PrimExpr

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

        bodies[stage] = _simplify_reads(op, rewrite_loads(op.body, expand))
    return bodies


def _divides_by_symbol(e: PrimExpr) -> bool:
    return any(
        isinstance(n, (FloorDiv, FloorMod, Div, Mod)) and not isinstance(n.b, IntImm)
        for n in distinct_nodes(e)
    )


def _simplify_reads(op: ComputeOp, body: PrimExpr) -> PrimExpr:
    """``body`` with the indices that divide by a symbolic dim simplified under the ranges of
    ``op``'s axes (see the module docstring)."""
    axes = (*op.axis, *op.reduce_axis)
    if all(ax.dom is None or isinstance(ax.dom.extent, IntImm) for ax in axes):
        return body  # NOTE: static stages (most of them) skip the walk: nothing to prove
    if not any(_divides_by_symbol(i) for n in loads_in(body) for i in n.indices):
        return body
    ana = Analyzer()
    for ax in axes:
        if ax.dom is not None:
            ana.bind(ax, ax.dom)

    def simplified(load: ProducerLoad) -> PrimExpr:
        if not any(_divides_by_symbol(i) for i in load.indices):
            return load
        return replace(load, indices=tuple(ana.simplify(i) for i in load.indices))

    return rewrite_loads(body, simplified)


def loads_in(expr: Any) -> list[ProducerLoad]:
    """Every distinct tensor read (node) in ``expr``, in pre-order."""
    return [n for n in distinct_nodes(expr) if isinstance(n, ProducerLoad)]


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
