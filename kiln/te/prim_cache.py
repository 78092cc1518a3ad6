"""Schedule primitives that add stages: ``cache_read`` and ``cache_write``.

``cache_read(T, scope, readers)`` adds a stage copying ``T`` into a ``scope`` buffer and makes
``readers`` read the copy. With ``compute_at`` the copy covers only the tile a loop iteration
uses, packed densely into a small scratch buffer. Preconditions: ``T`` is in the schedule,
``scope`` is a string, and every reader is a stage that reads ``T`` directly.

``cache_write(T, scope)`` moves ``T``'s computation (its reduction included) into a new stage
writing a ``scope`` buffer, and turns ``T``'s stage into a copy out of it: with ``compute_at``
the new stage accumulates a tile in registers/local memory. ``T``'s data axes stay with ``T``;
its reduction axes move to the new stage. Preconditions: ``T`` is a compute whose stage has not
been transformed, annotated or placed yet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.errors import IRError, IRValueError
from kiln.te.reduce import Reduce
from kiln.te.rewrite import rewrite_loads, substitute_axes
from kiln.te.tensor import AxisVar, ComputeOp, ProducerLoad, Tensor
from kiln.tir.expr import convert
from kiln.tir.stmt import Range

if TYPE_CHECKING:
    from kiln.te.schedule import Schedule, Stage


def _scope(scope: Any, prim: str) -> str:
    if not isinstance(scope, str) or not scope:
        raise IRError(f"{prim}: scope must be a non-empty string such as 'local', got {scope!r}")
    return scope


def _cache_name(name: str, scope: str) -> str:
    return f"{name}_{scope.replace('.', '_')}"


def _reader_stages(sch: Schedule, source: Stage, readers: Any) -> list[Stage]:
    items = list(readers) if isinstance(readers, (list, tuple)) else [readers]
    if not items:
        raise IRValueError(f"cache_read: no readers given for {source.name!r}")
    out: list[Stage] = []
    for r in items:
        stage = sch[r]
        if source not in [sch.stage_map.get(t.op) for t in stage.op.input_tensors]:
            raise IRValueError(f"cache_read: stage {stage.name!r} does not read {source.name!r}")
        if stage not in out:
            out.append(stage)
    return out


def _replace_op(sch: Schedule, stage: Stage, op: ComputeOp) -> None:
    stage.op = op
    sch.stage_map[op] = stage


def cache_read(sch: Schedule, tensor: Tensor, scope: str, readers: Any) -> Tensor:
    """Add a copy of ``tensor`` in ``scope``; ``readers`` read the copy from now on."""
    scope = _scope(scope, "cache_read")
    source = sch[tensor]
    out = source.op.output(0)
    stages = _reader_stages(sch, source, readers)
    axes = tuple(
        AxisVar(f"ax{d}", dim.dtype, dom=Range(convert(0, dim.dtype), dim))
        for d, dim in enumerate(out.shape)
    )
    cache_op = ComputeOp(_cache_name(out.name, scope), "", None, axes, (), out[axes])
    cache = cache_op.output(0)
    for stage in stages:
        op = stage.op

        def redirect(load: ProducerLoad) -> ProducerLoad:
            return cache[load.indices] if sch.stage_map.get(load.producer.op) is source else load

        body = rewrite_loads(op.body, redirect)
        _replace_op(sch, stage, ComputeOp(op.name, op.tag, op.attrs, op.axis, op.reduce_axis, body))
    sch.new_stage(cache.op, sch.stages.index(source) + 1, scope)
    return cache


def cache_write(sch: Schedule, tensor: Tensor, scope: str) -> Tensor:
    """Compute ``tensor`` into a new ``scope`` stage; ``tensor``'s stage copies it out."""
    scope = _scope(scope, "cache_write")
    stage = sch[tensor]
    op = stage.op
    if not isinstance(op, ComputeOp):
        raise IRValueError(
            f"cache_write: {stage.name!r} is a placeholder; only computes are written"
        )
    annotated = any(not a.is_default for a in stage.iter_attrs.values())
    if stage.relations or annotated or stage.attach_type != "root":
        raise IRValueError(
            f"cache_write: stage {stage.name!r} is already scheduled; call cache_write before "
            "other primitives on it"
        )
    fresh = tuple(AxisVar(a.name, a.dtype, dom=a.dom) for a in op.axis)
    vmap = dict(zip(op.axis, fresh))
    cache_op = ComputeOp(
        _cache_name(op.name, scope), op.tag, op.attrs, fresh, op.reduce_axis, _move(op.body, vmap)
    )
    cache = cache_op.output(0)
    copy = ComputeOp(op.name, op.tag, op.attrs, op.axis, (), cache[tuple(op.axis)])
    _replace_op(sch, stage, copy)
    for k in op.reduce_axis:
        stage.retired[k] = f"it moved to stage {cache_op.name!r} with cache_write"
    stage.all_iter_vars = list(op.axis)
    stage.leaf_iter_vars = list(op.axis)
    sch.new_stage(cache_op, sch.stages.index(stage), scope)
    return cache


def _move(body: Any, vmap: dict[Any, Any]) -> Any:
    """``body`` over the fresh data axes (a reduction keeps its own axes)."""
    if isinstance(body, Reduce):
        return Reduce(
            body.combiner,
            substitute_axes(body.source, vmap),
            body.axis,
            substitute_axes(body.condition, vmap),
        )
    return substitute_axes(body, vmap)
