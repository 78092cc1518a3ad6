"""Building the loop nest of one stage: loops, guards, stores, reduction init, attached stages.

Statements are placed by *position*: position ``p`` is inside leaf loop ``p - 1`` and around leaf
loop ``p``. At each position come, in order: the stages computed at leaf ``p - 1`` (each in its
own scratch allocation), the reduction's init nest (at the first reduction leaf), then loop
``p``. A guard sits at the position just inside the deepest loop it reads, so a split tail is
skipped as early as possible. A reduction's init nest repeats the data-parallel loops that lie
inside the first reduction loop, with fresh variables.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kiln.arith import simplify
from kiln.arith.linear import to_linear
from kiln.errors import IRValueError
from kiln.ir.structural import structural_equal
from kiln.te.lower_loops import Guard, StageLoops, ceildiv, divides
from kiln.te.reduce import Reduce
from kiln.te.rewrite import rewrite_loads
from kiln.te.tensor import Operation, ProducerLoad, Tensor
from kiln.tir.analysis.vars import free_vars
from kiln.tir.buffer import Buffer
from kiln.tir.expr import (
    And,
    BufferLoad,
    PrimExpr,
    Var,
    as_const_int,
    const,
    convert,
    is_const_int,
)
from kiln.tir.functor import substitute
from kiln.tir.op import cast, prefetch
from kiln.tir.stmt import (
    Allocate,
    BufferStore,
    DeclBuffer,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IterKind,
    IterVar,
    Range,
    Stmt,
    seq,
)

if TYPE_CHECKING:
    from kiln.te.lower import LowerState
    from kiln.te.schedule import IterAttr, Stage


@dataclass(eq=False)
class Loop:
    """One loop to emit: its variable, extent and (optional) schedule attributes."""

    var: Var
    extent: PrimExpr
    attr: IterAttr | None
    elided: bool = False


def make_for(loop: Loop, body: Stmt) -> For:
    """The `For` of ``loop`` around ``body``."""
    zero = convert(0, loop.var.dtype)
    attr = loop.attr
    if attr is None:
        return For(loop.var, zero, loop.extent, ForKind.SERIAL, body)
    binding = None
    if attr.kind is ForKind.THREAD_BINDING:
        dom = Range(zero, loop.extent)
        binding = IterVar(dom, loop.var, IterKind.THREAD_INDEX, attr.thread_tag)
    return For(loop.var, zero, loop.extent, attr.kind, body, binding, attr.pragmas)


def allocate(buf: Buffer, body: Stmt) -> Stmt:
    """Allocate ``buf`` (rank 0 takes one element) and declare it over ``body``."""
    extents = buf.shape or (convert(1),)
    return Allocate(buf.data, buf.dtype, extents, const(True), DeclBuffer(buf, body))


def _all(conds: list[PrimExpr]) -> PrimExpr:
    out = conds[0]
    for c in conds[1:]:
        out = And(out, c)
    return out


def assemble(
    loops: list[Loop],
    inner: Stmt,
    pre: dict[int, list[Stmt]],
    guards: dict[int, list[PrimExpr]],
    allocs: dict[int, list[Buffer]],
) -> Stmt:
    """Nest ``loops`` around ``inner``, placing statements, guards and allocations by position."""
    stmt = inner
    for p in range(len(loops), -1, -1):
        if p < len(loops) and not loops[p].elided:
            stmt = make_for(loops[p], stmt)
        stmt = seq(*pre.get(p, ()), stmt)
        if guards.get(p):
            stmt = IfThenElse(_all(guards[p]), stmt)
        for buf in reversed(allocs.get(p, ())):
            stmt = allocate(buf, stmt)
    return stmt


def lower_value(state: LowerState, sl: StageLoops, expr: PrimExpr) -> PrimExpr:
    """``expr`` over the stage's loop variables, tensor reads turned into buffer loads."""

    def load(n: ProducerLoad) -> PrimExpr:
        src = state.sch.stage_map[n.producer.op]
        mins = state.region_min(src)
        # NOTE: a tensor's indices may be wider than its shape (an int32-shaped weight read
        # at a symbolic batch's int64 loop variables): the region start takes the index's dtype
        idx = tuple(simplify(i - cast(i.dtype, m)) for i, m in zip(n.indices, mins))
        return BufferLoad(state.buffers[src], idx)

    return rewrite_loads(expr, load, sl.root_values)


def _loops(stage: Stage, sl: StageLoops) -> list[Loop]:
    out = []
    for a in sl.leaves:
        attr = stage.iter_attrs.get(a)
        ext = sl.extents[a]
        if attr is not None and attr.kind is ForKind.VECTORIZED and as_const_int(ext) is None:
            raise IRValueError(
                f"vectorize: axis {a.name!r} of stage {stage.name!r} has extent {ext}, which is "
                "not a constant; split it by a constant factor and vectorize the inner axis"
            )
        out.append(Loop(sl.loop_vars[a], ext, attr, a in sl.elided))
    return out


def build_stage(state: LowerState, stage: Stage) -> Stmt:
    """The complete nest of ``stage``, with the stages computed at its loops inside."""
    sl = state.loops[stage]
    if any(is_const_int(ext, 0) for _, ext in sl.region):
        # NOTE: an empty region computes nothing: no loop nest, so no index arithmetic over a
        # zero extent (fused loops would divide by it) and no constant indices into empty
        # buffers reach the verifier.
        return seq()
    buf = state.buffers[stage]
    body = state.bodies[stage]
    op = stage.op
    idx = tuple(sl.offsets[a] for a in op.axis)  # type: ignore[attr-defined]
    pre: dict[int, list[Stmt]] = defaultdict(list)
    allocs: dict[int, list[Buffer]] = defaultdict(list)
    for child in state.children[stage]:
        p = sl.leaves.index(child.attach_ivar) + 1  # type: ignore[arg-type]
        pre[p].append(build_stage(state, child))
        if child not in state.params:
            allocs[p].append(state.buffers[child])
    guards: dict[int, list[PrimExpr]] = defaultdict(list)
    # NOTE: every thread of a block must reach a cooperative (shared) fetch and its barriers,
    # so a stage hosting one guards only its own store, never the nest around the fetch.
    cooperative = _hosts_shared(state, stage)
    for g in sl.guards if not cooperative else ():
        guards[sl.depth(g.deps)].append(g.cond)
    if isinstance(body, Reduce):
        inner = _update(state, sl, buf, body, idx)
        pre[sl.first_reduce].append(_init_nest(state, stage, sl, body, idx))
    else:
        inner = BufferStore(buf, lower_value(state, sl, body), idx)
    if cooperative and sl.guards:
        inner = IfThenElse(_all([g.cond for g in sl.guards]), inner)
    for p, hint in prefetches(state, stage, sl):
        pre[p].append(hint)
    loops = _loops(stage, sl)
    vmap = _reuse_threads(state, stage, loops, guards)
    return substitute(assemble(loops, inner, pre, guards, allocs), vmap)


def _sources(state: LowerState, tensor: Tensor) -> set[Operation]:
    """The materialized operations whose reads stand for reads of ``tensor`` once inlined
    stages are substituted: ``tensor``'s own, or those of an inlined stage's inputs."""
    stage = state.sch.stage_map.get(tensor.op)
    if stage is None or not stage.is_inlined:
        return {tensor.op}
    out: set[Operation] = set()
    for t in stage.op.input_tensors:
        out |= _sources(state, t)
    return out


def _reads(
    state: LowerState, sl: StageLoops, expr: PrimExpr, sources: set[Operation]
) -> list[PrimExpr]:
    """The lowered reads in ``expr`` of the operations ``sources``."""
    seen: list[PrimExpr] = []

    def keep(n: ProducerLoad) -> PrimExpr:
        if n.producer.op in sources:
            seen.append(lower_value(state, sl, n))
        return n

    rewrite_loads(expr, keep, sl.root_values)
    return seen


def prefetches(state: LowerState, stage: Stage, sl: StageLoops) -> list[tuple[int, Stmt]]:
    """The ``prefetch`` hints of ``stage`` (`Stage.prefetch`) with their positions: each read of
    the tensor whose index depends on the axis, at the axis shifted by the offset and the loops
    inside it at zero, as ``tir.prefetch(load)`` at the top of the axis's loop body."""
    out: list[tuple[int, Stmt]] = []
    body = state.bodies[stage]
    expr = body.source if isinstance(body, Reduce) else body
    for tensor, axis, offset in stage.prefetches:
        if axis not in sl.leaves:
            raise IRValueError(
                f"prefetch: axis {axis.name!r} of stage {stage.name!r} was split or fused after "
                "the prefetch was set; set it on a current leaf"
            )
        k = sl.leaves.index(axis)
        var = sl.loop_vars[axis]
        shift: dict[Var, PrimExpr] = {var: var + convert(offset, var.dtype)}
        shift.update({sl.loop_vars[a]: convert(0, a.dtype) for a in sl.leaves[k + 1 :]})
        seen = _reads(state, sl, expr, _sources(state, tensor))
        hints: list[BufferLoad] = []
        for load in seen:
            moved = substitute(load, shift)
            if not isinstance(moved, BufferLoad) or var not in free_vars(load):
                continue  # the same element every iteration: nothing to fetch ahead
            hint = BufferLoad(moved.buffer, tuple(simplify(i) for i in moved.indices))
            if not any(structural_equal(hint, h) for h in hints):
                hints.append(hint)
        out.extend((k + 1, Evaluate(prefetch(h))) for h in hints)
    return out


def _hosts_shared(state: LowerState, stage: Stage) -> bool:
    """True when a ``shared`` stage is computed somewhere inside ``stage``'s loops."""
    return any(c.scope == "shared" or _hosts_shared(state, c) for c in state.children[stage])


def _enclosing_threads(state: LowerState, stage: Stage) -> dict[str, tuple[Var, PrimExpr]]:
    """Thread tag -> (variable, extent) of the bound loops around ``stage``'s attach point."""
    out: dict[str, tuple[Var, PrimExpr]] = {}
    host, ivar = stage.attach_stage, stage.attach_ivar
    while stage.attach_type == "scope" and host is not None:
        hl = state.loops[host]
        for a in hl.leaves[: hl.leaves.index(ivar) + 1]:  # type: ignore[arg-type]
            attr = host.iter_attrs.get(a)
            if attr is not None and attr.kind is ForKind.THREAD_BINDING:
                out.setdefault(attr.thread_tag, (hl.loop_vars[a], hl.extents[a]))
        stage, host, ivar = host, host.attach_stage, host.attach_ivar
    return out


def _reuse_threads(
    state: LowerState, stage: Stage, loops: list[Loop], guards: dict[int, list[PrimExpr]]
) -> dict[Var, PrimExpr]:
    """Loops bound to a thread tag an enclosing loop already binds reuse its variable.

    NOTE: a thread index cannot be bound twice (the verifier rejects it). A loop of extent ``E``
    on a tag of ``T`` threads becomes a serial loop ``o`` over ``ceil(E / T)`` strides, the axis
    being ``o * T + thread``, guarded by ``< E`` unless ``T`` divides ``E``; when the extents
    match the loop disappears and the axis is the thread index itself (a cooperative fetch).
    """
    outer = _enclosing_threads(state, stage)
    vmap: dict[Var, PrimExpr] = {}
    for p, loop in enumerate(loops):
        attr = loop.attr
        if attr is None or attr.kind is not ForKind.THREAD_BINDING or attr.thread_tag not in outer:
            continue
        tvar, threads = outer[attr.thread_tag]
        ext = to_linear(loop.extent)
        diff = ext.plus(to_linear(threads), -1)
        if diff.is_const and diff.const == 0:
            vmap[loop.var] = tvar
            loops[p] = Loop(loop.var, loop.extent, None, elided=True)
            continue
        t = as_const_int(threads)
        if t is None:
            raise IRValueError(
                f"bind: stage {stage.name!r} binds {attr.thread_tag!r} inside a loop bound to it "
                f"with extent {threads}, not a constant; bind equal extents"
            )
        strides = ceildiv(loop.extent, convert(t, loop.extent.dtype))
        o = Var(state.fresh_name(f"{loop.var.name}_o"), loop.var.dtype)
        single = as_const_int(strides) == 1
        vmap[loop.var] = tvar if single else simplify(o * convert(t, o.dtype) + tvar)
        loops[p] = Loop(o, strides, None, elided=single)
        if not divides(t, ext.const, *ext.terms.values()):
            guards[p + 1].append(loop.var < loop.extent)
    return vmap


def _update(
    state: LowerState, sl: StageLoops, buf: Buffer, body: Reduce, idx: tuple[PrimExpr, ...]
) -> Stmt:
    source = lower_value(state, sl, body.source)
    value = body.combiner.combine(BufferLoad(buf, idx), source)
    store: Stmt = BufferStore(buf, value, idx)
    cond = lower_value(state, sl, body.condition)
    if not is_const_int(cond, 1):
        store = IfThenElse(cond, store)
    return store


def _init_nest(
    state: LowerState, stage: Stage, sl: StageLoops, body: Reduce, idx: tuple[PrimExpr, ...]
) -> Stmt:
    """Store the identity over the data loops that lie inside the first reduction loop."""
    r = sl.first_reduce
    inside = [(k, a) for k, a in enumerate(sl.leaves) if k >= r and not a.is_reduce]
    fresh = {sl.loop_vars[a]: Var(state.fresh_name(f"{a.name}_init"), a.dtype) for _, a in inside}
    position = {k: j for j, (k, _) in enumerate(inside)}
    loops = [
        Loop(fresh[sl.loop_vars[a]], sl.extents[a], stage.iter_attrs.get(a), a in sl.elided)
        for _, a in inside
    ]
    guards: dict[int, list[PrimExpr]] = defaultdict(list)
    for g in sl.guards:
        if not g.reduce and sl.depth(g.deps) > r:
            guards[_init_depth(g, position, r)].append(substitute(g.cond, fresh))
    init_idx = tuple(substitute(i, fresh) for i in idx)
    store = BufferStore(state.buffers[stage], body.combiner.identity, init_idx)
    return assemble(loops, store, {}, guards, {})


def _init_depth(g: Guard, position: dict[int, int], r: int) -> int:
    inner = [position[k] for k in g.deps if k >= r]
    return max(inner) + 1 if inner else 0
