"""Variable bounds implied by a condition (used inside ``if`` branches and after asserts).

`constraint_bounds(cond, bound)` reads conjunctions of comparisons between a variable and an
expression and returns, per variable, an interval the variable must lie in whenever ``cond``
holds. Anything it does not understand contributes nothing, so the result is always sound.
"""

from __future__ import annotations

from collections.abc import Callable

from kiln.arith.bound import NEG_INF, POS_INF, ConstIntBound
from kiln.tir.expr import EQ, GE, GT, LE, LT, And, PrimExpr, Var

_FLIP = {LT: GT, LE: GE, GT: LT, GE: LE, EQ: EQ}


def _from_compare(op: type, other: ConstIntBound) -> ConstIntBound | None:
    """Where ``v`` lies when ``v op w`` holds for some ``w`` in ``other``."""
    lo, hi = other.min_value, other.max_value
    if op is LT:
        return ConstIntBound(NEG_INF, hi - 1) if hi != POS_INF else None
    if op is LE:
        return ConstIntBound(NEG_INF, hi) if hi != POS_INF else None
    if op is GT:
        return ConstIntBound(lo + 1, POS_INF) if lo != NEG_INF else None
    if op is GE:
        return ConstIntBound(lo, POS_INF) if lo != NEG_INF else None
    return other  # EQ


def constraint_bounds(
    cond: PrimExpr, bound: Callable[[PrimExpr], ConstIntBound]
) -> dict[Var, ConstIntBound]:
    """Intervals of variables implied by ``cond`` (see the module docstring)."""
    out: dict[Var, ConstIntBound] = {}
    pending = [cond]
    while pending:
        c = pending.pop()
        if isinstance(c, And):
            pending.extend((c.a, c.b))
            continue
        op = type(c)
        if op not in _FLIP or not c.a.dtype.is_integer:  # type: ignore[attr-defined]
            continue
        for var, other, o in ((c.a, c.b, op), (c.b, c.a, _FLIP[op])):  # type: ignore[attr-defined]
            if not isinstance(var, Var):
                continue
            b = _from_compare(o, bound(other))
            if b is None:
                continue
            prev = out.get(var)
            merged = b if prev is None else prev.intersect(b)
            if merged is not None:
                out[var] = merged
    return out
