"""Schedule steps that change the compute graph: `rfactor` and `recompute_for`.

`kiln.te` has no such primitives yet, so they live here, built the way `te.prim_cache` builds
``cache_write``: a new stage is inserted and a stage's operation is replaced, while the original
tensor keeps mapping to its stage (so arguments and readers still find it).

- ``rfactor(s, T, lanes, parts)`` splits the innermost reduction axis ``k`` of ``T`` into
  ``k = (c * per_part + ko) * lanes + l``; a new stage ``T.rf[d..., c, l]`` reduces over ``ko``
  (and any other reduction axes), and ``T`` then reduces ``T.rf`` over ``(c, l)``. The lane axis
  ``l`` is data-parallel, so the partial stage can be vectorized, and the part axis ``c`` can
  run in parallel; neither is possible on a reduction axis. A ragged tail is masked with the
  reduction's ``where`` condition.
- ``recompute_for(s, reader, tensors)`` gives ``reader`` private copies of ``tensors`` (producers
  first): a stage whose value two consumers need inside the same loop can be computed twice
  there, which `te`'s ``compute_at`` (one reader per attached stage) otherwise forbids.

NOTE: both belong in `kiln.te` as schedule primitives; see the report of this change.
"""

from __future__ import annotations

from typing import Any

from kiln.errors import IRError
from kiln.te import AxisVar, ComputeOp, Reduce, Schedule, Stage, Tensor, reduce_axis
from kiln.te.rewrite import rewrite_loads, substitute_axes
from kiln.te.tensor import ProducerLoad
from kiln.tir.expr import And, IntImm, PrimExpr, convert
from kiln.tir.stmt import Range


def _replace_op(sch: Schedule, stage: Stage, op: ComputeOp) -> None:
    """Make ``stage`` compute ``op`` from scratch (fresh loops, no annotations)."""
    stage.op = op
    sch.stage_map[op] = stage
    stage.all_iter_vars = [*op.axis, *op.reduce_axis]
    stage.leaf_iter_vars = list(stage.all_iter_vars)
    stage.relations = []
    stage.iter_attrs = {}


def _fresh_axes(axes: tuple[AxisVar, ...]) -> tuple[AxisVar, ...]:
    return tuple(AxisVar(a.name, a.dtype, dom=a.dom, iter_kind=a.iter_kind) for a in axes)


def _combine(cond: PrimExpr, extra: PrimExpr) -> PrimExpr:
    if isinstance(cond, IntImm) and cond.value == 1:
        return extra
    return And(cond, extra)


def rfactor(sch: Schedule, tensor: Tensor, lanes: int, parts: int = 1) -> Tensor:
    """Split ``tensor``'s reduction into a partial stage over ``(parts, lanes)`` slots (see
    module docstring); returns the partial tensor."""
    stage = sch[tensor]
    op = stage.op
    if not isinstance(op, ComputeOp) or not isinstance(op.body, Reduce):
        raise IRError(f"rfactor: {stage.name!r} is not a reduction")
    if stage.relations or stage.iter_attrs or stage.attach_type != "root":
        raise IRError(f"rfactor: stage {stage.name!r} is already scheduled; rfactor it first")
    body: Reduce = op.body
    k = op.reduce_axis[-1]
    assert k.dom is not None
    ext = k.dom.extent
    dt = k.dtype
    per_part = _ceil(ext, lanes * parts) if parts > 1 else None
    data = _fresh_axes(op.axis)
    c_ax = AxisVar("c", dt, dom=Range(convert(0, dt), convert(parts, dt)))
    l_ax = AxisVar("l", dt, dom=Range(convert(0, dt), convert(lanes, dt)))
    n_ko = per_part if per_part is not None else _ceil(ext, lanes)
    ko = reduce_axis(Range(convert(0, dt), convert(n_ko, dt)), name=f"{k.name}_o")
    others = op.reduce_axis[:-1]
    fresh_others = tuple(reduce_axis(r.dom, name=r.name) for r in others)  # type: ignore[arg-type]
    flat = (c_ax * n_ko + ko) * lanes + l_ax if parts > 1 else ko * lanes + l_ax
    value = k.dom.min + flat if not _is_zero(k.dom.min) else flat
    vmap: dict[Any, PrimExpr] = {**dict(zip(op.axis, data)), **dict(zip(others, fresh_others))}
    vmap[k] = value
    cond = substitute_axes(body.condition, vmap)
    if not _divides(ext, lanes * parts if parts > 1 else lanes, n_ko):
        cond = _combine(cond, flat < ext)
    rf_body = Reduce(body.combiner, substitute_axes(body.source, vmap), (*fresh_others, ko), cond)
    rf_axes = (*data, c_ax, l_ax) if parts > 1 else (*data, l_ax)
    rf_op = ComputeOp(f"{op.name}_rf", op.tag, op.attrs, rf_axes, rf_body.axis, rf_body)
    rf = rf_op.output(0)
    _install_final(sch, stage, op, rf, parts > 1)
    new = Stage(sch, rf_op)
    sch.add_stage(new, sch.stages.index(stage))
    return rf


def _install_final(
    sch: Schedule, stage: Stage, op: ComputeOp, rf: Tensor, with_parts: bool
) -> None:
    """Replace ``stage``'s op by the reduction of ``rf`` over its part and lane axes."""
    body: Reduce = op.body  # type: ignore[assignment]
    axes: list[AxisVar] = []
    if with_parts:
        axes.append(reduce_axis(rf.shape[-2], name="rc"))
    axes.append(reduce_axis(rf.shape[-1], name="rl"))
    source = rf[(*op.axis, *axes)]
    final = Reduce(body.combiner, source, tuple(axes), convert(True))
    _replace_op(sch, stage, ComputeOp(op.name, op.tag, op.attrs, op.axis, tuple(axes), final))


def _ceil(ext: PrimExpr, by: int) -> PrimExpr:
    if isinstance(ext, IntImm):
        return convert(-(-ext.value // by), ext.dtype)
    return (ext + (by - 1)) // by


def _is_zero(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 0


def _divides(ext: PrimExpr, chunk: int, n_ko: PrimExpr) -> bool:
    """True when the (parts, ko, lanes) grid covers ``ext`` exactly."""
    if not isinstance(ext, IntImm) or not isinstance(n_ko, IntImm):
        return False
    return ext.value % chunk == 0 and n_ko.value * chunk == ext.value


def recompute_for(sch: Schedule, reader: Tensor, tensors: list[Tensor]) -> dict[Tensor, Tensor]:
    """Give ``reader`` its own copies of ``tensors`` (listed producers first); returns the map
    from each original tensor to its copy."""
    host = sch[reader]
    copies: dict[Stage, Tensor] = {}
    for t in tensors:
        src = sch[t]
        op = src.op
        if not isinstance(op, ComputeOp):
            raise IRError(f"recompute_for: {src.name!r} is a placeholder; only computes are copied")
        axes = _fresh_axes(op.axis)
        vmap: dict[Any, PrimExpr] = dict(zip(op.axis, axes))
        body = _redirect(sch, op.body, copies, vmap)
        raxes = body.axis if isinstance(body, Reduce) else ()
        new_op = ComputeOp(f"{op.name}_re", op.tag, op.attrs, axes, raxes, body)
        new = Stage(sch, new_op)
        sch.add_stage(new, sch.stages.index(src) + 1)
        copies[src] = new_op.output(0)
    hop = host.op
    assert isinstance(hop, ComputeOp)
    hbody = _redirect(sch, hop.body, copies, {})
    _replace_op(
        sch, host, ComputeOp(hop.name, hop.tag, hop.attrs, hop.axis, hop.reduce_axis, hbody)
    )
    return {t: copies[sch[t]] for t in tensors}


def _redirect(
    sch: Schedule, body: Any, copies: dict[Stage, Tensor], vmap: dict[Any, PrimExpr]
) -> Any:
    """``body`` with axes substituted and reads of copied stages sent to the copies; a
    reduction gets fresh reduction axes."""
    if isinstance(body, Reduce):
        raxes = tuple(reduce_axis(a.dom, name=a.name) for a in body.axis)  # type: ignore[arg-type]
        vmap = {**vmap, **dict(zip(body.axis, raxes))}
        source = _redirect(sch, body.source, copies, vmap)
        cond = _redirect(sch, body.condition, copies, vmap)
        return Reduce(body.combiner, source, raxes, cond)

    def load(n: ProducerLoad) -> PrimExpr:
        copy = copies.get(sch.stage_map.get(n.producer.op))  # type: ignore[arg-type]
        return copy[n.indices] if copy is not None else n

    return rewrite_loads(body, load, vmap)
