"""Bound inference: which part of a tensor a stage computed at a consumer's loop must produce.

For a stage computed at loop ``a`` of its consumer, the consumer's loops outside and at ``a`` are
fixed and the loops inside vary over their whole extent. Each index the consumer reads the stage
at is an affine form in those loop variables; its range is ``[min, min + extent)`` where the
extent adds ``|coef| * (loop_extent - 1)`` for every varying loop, so it never depends on a loop
variable. Ranges of several reads are merged when they differ by a constant. Where an index is
not affine in the varying loops (``x * n``, a select), the whole dimension is produced instead,
which is always correct. When a region cannot be proven to lie inside the tensor, the producer
gets guards so it never computes (or reads inputs) outside its domain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.ir.visitor import pre_order_nodes
from kiln.te.inline import loads_in
from kiln.te.linear import Affine, Key, const_value, expr_key, to_affine
from kiln.te.lower_loops import Guard, StageLoops
from kiln.te.rewrite import substitute_axes
from kiln.tir.expr import Add, FloorDiv, FloorMod, IntImm, Mul, PrimExpr, SizeVar, Var, convert

if TYPE_CHECKING:
    from kiln.te.lower import LowerState
    from kiln.te.schedule import Stage

Interval = tuple[Affine, Affine]  # (min, extent)


def _mentions(e: PrimExpr, keys: dict[Key, Any]) -> bool:
    return any(isinstance(n, Var) and expr_key(n) in keys for n in pre_order_nodes(e))


def interval(e: PrimExpr, varying: dict[Key, PrimExpr]) -> Interval | None:
    """Range of ``e`` while the loops in ``varying`` (key -> extent) run, or None if unknown."""
    f = to_affine(e)
    lo, ext = Affine(f.dtype, f.const), Affine(f.dtype, 1)
    for key, (atom, c) in f.terms.items():
        if key in varying:
            a_lo, a_ext = Affine(f.dtype), to_affine(varying[key])
        elif _mentions(atom, varying):
            got = _atom_interval(atom, varying)
            if got is None:
                return None
            a_lo, a_ext = got
        else:
            lo = lo + Affine.atom(atom).scale(c)
            continue
        span = a_ext.plus(-1)
        lo = lo + (a_lo.scale(c) if c > 0 else (a_lo + span).scale(c))
        ext = ext + span.scale(abs(c))
    return lo, ext


def _atom_interval(atom: PrimExpr, varying: dict[Key, PrimExpr]) -> Interval | None:
    if not isinstance(atom, (FloorDiv, FloorMod)):
        return None
    c = const_value(atom.b)
    if c is None or c <= 0:
        return None
    inner = interval(atom.a, varying)
    dt = atom.dtype
    if isinstance(atom, FloorMod):
        if inner and inner[1].is_const and inner[1].const <= c and inner[0].divisible_by(c):
            return Affine(dt), inner[1]
        return Affine(dt), Affine(dt, c)
    if inner is None or not inner[1].is_const:
        return None
    x_lo, x_ext = inner
    lo = to_affine(FloorDiv(x_lo.to_expr(), convert(c, dt)))
    if x_lo.divisible_by(c):
        return lo, Affine(dt, -(-x_ext.const // c))
    return lo, Affine(dt, (x_ext.const + c - 2) // c + 1)


def union(a: Interval | None, b: Interval | None) -> Interval | None:
    """The smallest interval holding both, when their ends differ by constants."""
    if a is None or b is None:
        return None
    d = a[0] - b[0]
    if not d.is_const:
        return None
    if d.const < 0:
        a, b = b, a
        d = d.scale(-1)
    # now a starts d.const after b: the union starts at b's min
    end_gap = a[1].plus(d.const) - b[1]
    if not end_gap.is_const:
        return None
    return b[0], b[1] + Affine(d.dtype, max(0, end_gap.const))


def full_region(stage: Stage) -> list[tuple[PrimExpr, PrimExpr]]:
    """The whole tensor: ``(0, dim)`` per dimension."""
    return [(convert(0, s.dtype), s) for s in stage.op.output(0).shape]


def infer_region(state: LowerState, stage: Stage) -> list[tuple[PrimExpr, PrimExpr]]:
    """The (min, extent) per dimension ``stage`` must produce at its attach point."""
    host = stage.attach_stage
    if stage.attach_type != "scope" or host is None:
        return full_region(stage)
    hl = state.loops[host]
    k = hl.leaves.index(stage.attach_ivar)  # type: ignore[arg-type]
    varying = {expr_key(hl.loop_vars[a]): hl.extents[a] for a in hl.leaves[k + 1 :]}
    varying.update(relaxed_thread_loops(state, stage))
    shape = stage.op.output(0).shape
    dims: list[Interval | None] = []
    for load in loads_in(state.bodies[host]):
        if state.sch.stage_map[load.producer.op] is not stage:
            continue
        ivs = [interval(substitute_axes(i, hl.root_values), varying) for i in load.indices]
        dims = ivs if not dims else [union(a, b) for a, b in zip(dims, ivs)]
    out = []
    for d, dim in enumerate(shape):
        iv = dims[d] if dims else None
        if iv is None or _mentions(iv[1].to_expr(), state.loop_extents):
            out.append((convert(0, dim.dtype), dim))
        else:
            out.append((iv[0].to_expr(), iv[1].to_expr()))
    return out


def relaxed_prefixes(scope: str) -> tuple[str, ...]:
    """Thread tags whose loops a stage in ``scope`` is shared across (so it covers them all)."""
    if scope == "shared":
        return ("threadIdx.",)
    if scope in ("", "global"):
        return ("threadIdx.", "blockIdx.")
    return ()


def relaxed_thread_loops(state: LowerState, stage: Stage) -> dict[Key, PrimExpr]:
    """The thread-bound loops enclosing ``stage``'s attach point that its scope is shared
    across, as key -> extent: all the threads of a block share a ``shared`` buffer, so its
    region is the union over ``threadIdx``; a ``local`` buffer is per thread (none relaxed)."""
    prefixes = relaxed_prefixes(stage.scope)
    out: dict[Key, PrimExpr] = {}
    host, ivar = stage.attach_stage, stage.attach_ivar
    while prefixes and host is not None and host in state.loops:
        hl = state.loops[host]
        for a in hl.leaves[: hl.leaves.index(ivar) + 1]:  # type: ignore[arg-type]
            attr = host.iter_attrs.get(a)
            if attr is not None and attr.thread_tag.startswith(prefixes):
                out[expr_key(hl.loop_vars[a])] = hl.extents[a]
        if host.attach_type != "scope":
            break
        host, ivar = host.attach_stage, host.attach_ivar
    return out


def _over_loops(f: Affine, loops: dict[Key, PrimExpr]) -> Interval | None:
    """(lowest, highest) value of ``f`` over every loop's full range, as affine forms."""
    lo, hi = Affine(f.dtype, f.const), Affine(f.dtype, f.const)
    for key, (atom, c) in f.terms.items():
        if key in loops:
            span = to_affine(loops[key]).plus(-1).scale(c)
            lo, hi = (lo + span, hi) if c < 0 else (lo, hi + span)
        elif _mentions(atom, loops):
            return None
        else:
            lo, hi = lo + Affine.atom(atom).scale(c), hi + Affine.atom(atom).scale(c)
    return lo, hi


def _nonneg_expr(e: PrimExpr) -> bool:
    if isinstance(e, IntImm):
        return e.value >= 0
    if isinstance(e, SizeVar):
        return True
    if isinstance(e, (Add, Mul, FloorDiv, FloorMod)):
        return _nonneg_expr(e.a) and _nonneg_expr(e.b)
    return False


def nonneg(f: Affine) -> bool:
    """True when ``f`` is provably >= 0 (shape variables are non-negative)."""
    return f.const >= 0 and all(c > 0 and _nonneg_expr(a) for a, c in f.terms.values())


def region_guards(state: LowerState, sl: StageLoops) -> list[Guard]:
    """Guards keeping a computed-at stage inside its tensor's domain, where not provable."""
    if sl.stage.attach_type != "scope":
        return []
    guards = []
    op = sl.stage.op
    for axis, (lo, ext), dim in zip(op.axis, sl.region, op.output(0).shape):  # type: ignore
        over = _over_loops(to_affine(lo), state.loop_extents)
        value = sl.root_values[axis]
        if over is None or not nonneg(over[0]):
            guards.append(Guard(sl.deps[axis], value >= 0, False))
        if over is None or not nonneg(to_affine(dim) - over[1] - to_affine(ext)):
            guards.append(Guard(sl.deps[axis], value < dim, False))
    return guards
