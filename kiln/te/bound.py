"""Bound inference: which part of a tensor a stage computed at a consumer's loop must produce.

For a stage computed at loop ``a`` of its consumer, the consumer's loops outside and at ``a``
are fixed and the loops inside vary over their whole extent. Each index the consumer reads the
stage at is an affine form in those loop variables (the `kiln.arith.linear` form of its
`kiln.arith` simplification, so ``(io*8 + ii) // 4`` is ``io*2 + ii // 4``); its range is
``[min, min + extent)`` where the extent adds ``|coef| * (loop_extent - 1)`` for every varying
loop, so it never depends on a loop variable. Ranges of several reads are merged when they
differ by a constant; a stage may also have readers nested inside its host's loop (attached
there or deeper), whose reads are merged in with their own loops varying too. Where an index is
not affine in the varying loops (``x * n``, a select), the whole dimension is produced instead,
which is always correct. When a region cannot be proven to lie inside the tensor, the producer
gets guards so it never computes (or reads inputs) outside its domain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kiln.arith import simplify
from kiln.arith.bound import BoundAnalyzer
from kiln.arith.linear import Linear, from_linear, linear_bound, mul_factors, to_linear
from kiln.ir.dtype import DataType
from kiln.ir.visitor import pre_order_nodes
from kiln.te.inline import loads_in
from kiln.te.lower_loops import Guard, StageLoops
from kiln.te.rewrite import substitute_axes
from kiln.tir.expr import FloorDiv, FloorMod, PrimExpr, Var, as_const_int, convert

if TYPE_CHECKING:
    from kiln.te.lower import LowerState
    from kiln.te.schedule import Stage

Interval = tuple[Linear, Linear]  # (min, extent)
Loops = dict[Var, PrimExpr]  # loop variable -> extent


def linear(e: PrimExpr) -> Linear:
    """The linear form of ``e`` after `kiln.arith` simplification (floor splits applied)."""
    return to_linear(simplify(e))


def divisible(lin: Linear, c: int) -> bool:
    """True when every coefficient and the constant of ``lin`` are multiples of ``c``."""
    return lin.const % c == 0 and all(v % c == 0 for v in lin.terms.values())


def _divided(lin: Linear, c: int) -> Linear:
    """``lin / c`` for a ``lin`` that `divisible` says ``c`` divides."""
    return Linear({k: v // c for k, v in lin.terms.items()}, lin.const // c)


def _mentions(e: PrimExpr, loops: Loops) -> bool:
    return any(isinstance(n, Var) and n in loops for n in pre_order_nodes(e))


def interval(e: PrimExpr, varying: Loops) -> Interval | None:
    """Range of ``e`` while the loops in ``varying`` (variable -> extent) run, or None if
    unknown."""
    f = linear(e)
    lo, ext = Linear({}, f.const), Linear({}, 1)
    for atom, c in f.items():
        if atom in varying:
            a_lo, a_ext = Linear(), linear(varying[atom])  # type: ignore[index]
        elif _mentions(atom, varying):
            got = _atom_interval(atom, varying)
            if got is None:
                return None
            a_lo, a_ext = got
        else:
            lo = lo.add_term(atom, c)
            continue
        span = a_ext.plus(Linear({}, -1))
        lo = lo.plus(a_lo.scaled(c) if c > 0 else a_lo.plus(span).scaled(c))
        ext = ext.plus(span.scaled(abs(c)))
    return lo, ext


def _atom_interval(atom: PrimExpr, varying: Loops) -> Interval | None:
    if not isinstance(atom, (FloorDiv, FloorMod)):
        return None
    c = as_const_int(atom.b)
    if c is None:
        return _symbolic_interval(atom, varying)
    if c <= 0:
        return None
    inner = interval(atom.a, varying)
    dt = atom.dtype
    if isinstance(atom, FloorMod):
        if inner and inner[1].is_const and inner[1].const <= c and divisible(inner[0], c):
            return Linear(), inner[1]
        return Linear(), Linear({}, c)
    if inner is None:
        return None
    x_lo, x_ext = inner
    if divisible(x_lo, c) and divisible(x_ext, c):
        # NOTE: exact for symbolic extents too (a fused batch loop ``b * n`` split by ``n``)
        return _divided(x_lo, c), _divided(x_ext, c)
    if not x_ext.is_const:
        return None
    x_lo_expr = from_linear(x_lo, dt)
    if x_lo_expr is None:
        return None
    lo = linear(FloorDiv(x_lo_expr, convert(c, dt)))
    if divisible(x_lo, c):
        return lo, Linear({}, -(-x_ext.const // c))
    return lo, Linear({}, (x_ext.const + c - 2) // c + 1)


def _symbolic_interval(atom: FloorDiv | FloorMod, varying: Loops) -> Interval | None:
    """The range of a floor division / modulo by a non-negative symbolic divisor ``d`` (a shape
    variable, or a product of them): ``x % d`` is in ``[0, d)``, and ``x // d`` is in
    ``[lo / d, (lo + ext) / d)`` when ``d`` divides both ends (a fused loop ``b * 2 * s`` split
    by ``s``). NOTE: ``d`` is taken as positive: where it is 0 the division-by-zero guards
    stop the kernel before the value is used."""
    d = atom.b
    if linear_bound(linear(d), BoundAnalyzer().bound).min_value < 0:
        return None
    if isinstance(atom, FloorMod):
        return Linear(), linear(d)
    inner = interval(atom.a, varying)
    if inner is None:
        return None
    lo, ext = (_divided_by(part, d) for part in inner)
    return None if lo is None or ext is None else (lo, ext)


def _divided_by(lin: Linear, d: PrimExpr) -> Linear | None:
    """``lin / d`` when every term of ``lin`` has ``d`` as a factor and its constant is 0."""
    if lin.const:
        return None
    out = Linear()
    for atom, c in lin.items():
        rest = _without_factor(atom, d)
        if rest is None:
            return None
        out = out.plus(linear(rest).scaled(c))
    return out


def _without_factor(e: PrimExpr, d: PrimExpr) -> PrimExpr | None:
    """The product ``e`` with one factor that is ``d`` (the same object) removed, else None."""
    factors = mul_factors(e)
    for k, f in enumerate(factors):
        if f is d:
            rest = factors[:k] + factors[k + 1 :]
            out: PrimExpr = convert(1, e.dtype)
            for r in rest:
                out = out * r
            return out
    return None


def union(a: Interval | None, b: Interval | None) -> Interval | None:
    """The smallest interval holding both, when their ends differ by constants."""
    if a is None or b is None:
        return None
    d = a[0].plus(b[0], -1)
    if not d.is_const:
        return None
    if d.const < 0:
        a, b = b, a
        d = d.scaled(-1)
    # now a starts d.const after b: the union starts at b's min
    end_gap = a[1].plus(Linear({}, d.const)).plus(b[1], -1)
    if not end_gap.is_const:
        return None
    return b[0], b[1].plus(Linear({}, max(0, end_gap.const)))


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
    varying: Loops = {hl.loop_vars[a]: hl.extents[a] for a in hl.leaves[k + 1 :]}
    varying.update(relaxed_thread_loops(state, stage))
    shape = stage.op.output(0).shape
    dims: list[Interval | None] = []
    dtypes: list[DataType] = []
    for reader, vary in _readers_inside(state, stage, varying):
        rl = state.loops[reader]
        for load in loads_in(state.bodies[reader]):
            if state.sch.stage_map[load.producer.op] is not stage:
                continue
            ivs = [interval(substitute_axes(i, rl.root_values), vary) for i in load.indices]
            dims = ivs if not dims else [union(a, b) for a, b in zip(dims, ivs)]
            dtypes = dtypes or [i.dtype for i in load.indices]
    out = []
    for d, dim in enumerate(shape):
        iv = dims[d] if dims else None
        lo = ext = None
        if iv is not None:
            lo, ext = from_linear(iv[0], dtypes[d]), from_linear(iv[1], dtypes[d])
        if lo is None or ext is None or _mentions(ext, state.loop_extents):
            out.append((convert(0, dim.dtype), dim))
        else:
            out.append((lo, ext))
    return out


def _readers_inside(state: LowerState, stage: Stage, varying: Loops) -> list[tuple[Stage, Loops]]:
    """The readers of attached ``stage`` with the loops that vary for each while the stage's
    values live: ``varying`` for its host; for a reader nested inside the host's loop (see
    `kiln.te.prim_attach.nested_inside`) also every loop of the stages from it up to the host
    (all of them run inside the attach point)."""
    host = stage.attach_stage
    out: list[tuple[Stage, Loops]] = [(host, varying)]  # type: ignore[list-item]
    for reader in state.readers[stage]:
        if reader is host:
            continue
        vary = dict(varying)
        walk = reader
        while walk is not host and walk is not None:
            wl = state.loops[walk]
            vary.update({wl.loop_vars[a]: wl.extents[a] for a in wl.leaves})
            walk = walk.attach_stage  # type: ignore[assignment]
        out.append((reader, vary))
    return out


def relaxed_prefixes(scope: str) -> tuple[str, ...]:
    """Thread tags whose loops a stage in ``scope`` is shared across (so it covers them all)."""
    if scope == "shared":
        return ("threadIdx.",)
    if scope in ("", "global"):
        return ("threadIdx.", "blockIdx.")
    return ()


def relaxed_thread_loops(state: LowerState, stage: Stage) -> Loops:
    """The thread-bound loops enclosing ``stage``'s attach point that its scope is shared
    across, as variable -> extent: all the threads of a block share a ``shared`` buffer, so its
    region is the union over ``threadIdx``; a ``local`` buffer is per thread (none relaxed)."""
    prefixes = relaxed_prefixes(stage.scope)
    out: Loops = {}
    host, ivar = stage.attach_stage, stage.attach_ivar
    while prefixes and host is not None and host in state.loops:
        hl = state.loops[host]
        for a in hl.leaves[: hl.leaves.index(ivar) + 1]:  # type: ignore[arg-type]
            attr = host.iter_attrs.get(a)
            if attr is not None and attr.thread_tag.startswith(prefixes):
                out[hl.loop_vars[a]] = hl.extents[a]
        if host.attach_type != "scope":
            break
        host, ivar = host.attach_stage, host.attach_ivar
    return out


def _over_loops(f: Linear, loops: Loops) -> Interval | None:
    """(lowest, highest) value of ``f`` over every loop's full range, as linear forms."""
    lo, hi = Linear({}, f.const), Linear({}, f.const)
    for atom, c in f.items():
        if atom in loops or _mentions(atom, loops):
            got = interval(atom, loops)  # a loop, or a floor division / modulo of loops
            if got is None:
                return None
            first, span = got[0].scaled(c), got[1].plus(Linear({}, -1)).scaled(c)
            lo, hi = lo.plus(first), hi.plus(first)
            lo, hi = (lo.plus(span), hi) if c < 0 else (lo, hi.plus(span))
        else:
            lo, hi = lo.add_term(atom, c), hi.add_term(atom, c)
    return lo, hi


def nonneg(f: Linear) -> bool:
    """True when ``f`` is provably >= 0 (shape variables are non-negative)."""
    return linear_bound(f, BoundAnalyzer().bound).min_value >= 0


def region_guards(state: LowerState, sl: StageLoops) -> list[Guard]:
    """Guards keeping a computed-at stage inside its tensor's domain, where not provable."""
    if sl.stage.attach_type != "scope":
        return []
    guards = []
    op = sl.stage.op
    for axis, (lo, ext), dim in zip(op.axis, sl.region, op.output(0).shape):  # type: ignore
        over = _over_loops(linear(lo), state.loop_extents)
        value = sl.root_values[axis]
        if over is None or not nonneg(over[0]):
            guards.append(Guard(sl.deps[axis], value >= 0, False))
        if over is None or not nonneg(linear(dim).plus(over[1], -1).plus(linear(ext), -1)):
            guards.append(Guard(sl.deps[axis], value < dim, False))
    return guards
