"""Schedule steps that change the compute graph: `rfactor`, `recompute_for` and `pad_axis`.

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
- ``pad_axis(s, T, d, multiple)`` makes ``T``'s stage compute a domain whose axis ``d`` is
  rounded up to a multiple of ``multiple``, evaluating ``T`` at ``min(i, n - 1)`` there: a tile
  of ``multiple`` along ``d`` computed at a reader's loop then never leaves the (padded) domain,
  so it needs no guard inside its loops; the reader still reads rows ``< n`` only. This is how a
  register-tiled matrix product with a symbolic row count stays guard-free.
- ``pad_axis_with_zeros(s, T, d, multiple)`` does the same for a constant extent whose padded
  points must not read past an input's end (a matrix product's columns, read from B's rows):
  every input ``T`` reads with the axis as a bare index is read from a new zero-padded copy
  instead, so the padded points compute zeros that no reader looks at.

NOTE: these belong in `kiln.te` as schedule primitives; see the report of this change.
"""

from __future__ import annotations

from typing import Any

from kiln import te
from kiln.errors import IRError
from kiln.ir.visitor import pre_order_nodes
from kiln.te import AxisVar, ComputeOp, Reduce, Schedule, Stage, Tensor, reduce_axis
from kiln.te.inline import loads_in
from kiln.te.rewrite import rewrite_loads, substitute_axes
from kiln.te.tensor import ProducerLoad
from kiln.tir.expr import And, IntImm, Min, PrimExpr, convert
from kiln.tir.stmt import Range
from kiln.topi import tag
from kiln.topi.tag import Pattern, attrs_for


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


def pad_axis(sch: Schedule, tensor: Tensor, dim: int, multiple: int) -> None:
    """Make ``tensor``'s stage compute axis ``dim`` over ``ceil(n / multiple) * multiple``
    points, each at ``min(i, n - 1)`` (see module docstring); a no-op when ``multiple`` divides
    a constant extent."""
    stage = sch[tensor]
    op = stage.op
    if not isinstance(op, ComputeOp):
        raise IRError(f"pad_axis: {stage.name!r} is a placeholder")
    if stage.relations or stage.iter_attrs or stage.attach_type != "root":
        raise IRError(f"pad_axis: stage {stage.name!r} is already scheduled; pad it first")
    ax = op.axis[dim]
    assert ax.dom is not None
    n = ax.dom.extent
    if isinstance(n, IntImm) and n.value % multiple == 0:
        return
    padded = _ceil(n, multiple) * multiple
    axes = list(_fresh_axes(op.axis))
    axes[dim] = AxisVar(ax.name, ax.dtype, dom=Range(convert(0, ax.dtype), padded))
    vmap: dict[Any, PrimExpr] = dict(zip(op.axis, axes))
    vmap[ax] = Min(axes[dim], n - 1)
    body = _redirect(sch, op.body, {}, vmap)
    raxes = body.axis if isinstance(body, Reduce) else ()
    _replace_op(sch, stage, ComputeOp(op.name, op.tag, op.attrs, tuple(axes), raxes, body))


def pad_axis_with_zeros(sch: Schedule, tensor: Tensor, dim: int, multiple: int) -> bool:
    """Pad constant axis ``dim`` of ``tensor``'s stage to a multiple of ``multiple``, reading
    zero-padded copies of the inputs indexed by it (see module docstring); returns False (and
    changes nothing) when the axis is used other than as a bare index of an input read."""
    stage = sch[tensor]
    op = stage.op
    assert isinstance(op, ComputeOp) and stage.attach_type == "root" and not stage.relations
    ax = op.axis[dim]
    n = ax.dom.extent if ax.dom is not None else None
    if not isinstance(n, IntImm) or n.value % multiple == 0:
        return False
    uses = _bare_uses(op.body, ax)
    if uses is None:
        return False
    padded = convert(-(-n.value // multiple) * multiple, n.dtype)
    axes = list(_fresh_axes(op.axis))
    axes[dim] = AxisVar(ax.name, ax.dtype, dom=Range(convert(0, ax.dtype), padded))
    copies = {sch[src]: _zero_padded(sch, src, pos, padded, stage) for src, pos in uses.items()}
    body = _redirect(sch, op.body, copies, dict(zip(op.axis, axes)))
    raxes = body.axis if isinstance(body, Reduce) else ()
    _replace_op(sch, stage, ComputeOp(op.name, op.tag, op.attrs, tuple(axes), raxes, body))
    return True


def _mentions(e: Any, ax: AxisVar) -> bool:
    return any(node is ax for node in pre_order_nodes(e))


def _bare_uses(body: Any, ax: AxisVar) -> dict[Tensor, int] | None:
    """The tensors read with ``ax`` as a bare index (tensor -> position), or None when ``ax``
    is used any other way."""
    found: dict[Tensor, int] = {}
    bare = 0
    for load in loads_in(body):
        pos = [p for p, i in enumerate(load.indices) if i is ax]
        if any(_mentions(i, ax) for i in load.indices if i is not ax) or len(pos) > 1:
            return None
        if pos:
            if found.setdefault(load.producer, pos[0]) != pos[0]:
                return None
            bare += 1
    total = sum(1 for node in pre_order_nodes(body) if node is ax)
    if total != bare:
        return None
    return found


def _zero_padded(sch: Schedule, src: Tensor, pos: int, padded: PrimExpr, before: Stage) -> Tensor:
    """A new stage: ``src`` with axis ``pos`` extended to ``padded`` by zeros."""
    shape = list(src.shape)
    n = shape[pos]
    shape[pos] = padded
    zero = convert(0.0 if src.dtype.is_float else 0, src.dtype)

    def body(*i: Any) -> Any:
        clamped = list(i)
        clamped[pos] = Min(i[pos], n - 1)
        return te.if_then_else(i[pos] < n, src[tuple(clamped)], zero)

    attrs = attrs_for(tag.INJECTIVE, Pattern.INJECTIVE, no_inline=True)
    out = te.compute(tuple(shape), body, name=f"{src.name}_pad", tag=tag.INJECTIVE, attrs=attrs)
    sch.add_stage(Stage(sch, out.op), sch.stages.index(before))
    return out
