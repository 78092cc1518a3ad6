"""Logic rules: comparisons decided by bounds, canonical comparisons, and/or/not.

Comparisons of scalar signed integers are rewritten through the linear form of ``a - b``:

- decided when the bound of ``a - b`` settles them (``i < 10`` is true for ``i`` in ``[0, 8)``);
- ``a == b`` is false when the gcd of the coefficients does not divide the constant;
- otherwise put in canonical form: the first term (in order of appearance) on the left with a
  positive coefficient, terms of the same sign beside it, the others and the constant on the
  right, the coefficients' common factor divided out; a strict comparison becomes non-strict
  (or back) only when that makes the constant zero (``x + 1 <= y`` -> ``x < y``,
  ``x*4 < 10`` -> ``x < 3``, ``5 < x`` -> ``x > 5``, ``x + 5 < 10`` -> ``x < 5``).

Moving terms across a comparison assumes no signed overflow (as everywhere in `kiln.arith`).
"""

from __future__ import annotations

from typing import Any

from kiln.arith.bound import NEG_INF, POS_INF
from kiln.arith.linear import Atom, Linear, coef_gcd, from_linear, linear_bound, to_linear
from kiln.arith.rules import (
    RewriteContext,
    RuleSet,
    bool_const,
    is_index,
    is_pure,
    make_int,
)
from kiln.ir.structural import structural_equal
from kiln.tir.expr import EQ, GE, GT, LE, LT, NE, And, FloorMod, Not, Or, PrimExpr, as_const_int

LOGIC = RuleSet("logic")

_CMPS = (EQ, NE, LT, LE, GT, GE)
FLIP = {LT: GT, LE: GE, GT: LT, GE: LE, EQ: EQ, NE: NE}
"""The comparison with its operands swapped (``a < b`` is ``b > a``)."""
_NEGATE = {LT: GE, LE: GT, GT: LE, GE: LT, EQ: NE, NE: EQ}


def _diff(e: Any) -> Linear:
    return to_linear(e.a).plus(to_linear(e.b), -1)


def decide_compare(op: type, lo: int, hi: int) -> bool | None:
    """The truth of ``d op 0`` for every ``d`` in ``[lo, hi]``, or None if it varies."""
    if op is LT:
        return True if hi < 0 else False if lo >= 0 else None
    if op is LE:
        return True if hi <= 0 else False if lo > 0 else None
    if op is GT:
        return True if lo > 0 else False if hi <= 0 else None
    if op is GE:
        return True if lo >= 0 else False if hi < 0 else None
    equal = True if lo == hi == 0 else False if (lo > 0 or hi < 0) else None
    if op is EQ or equal is None:
        return equal
    return not equal


@LOGIC.rule(*_CMPS)
def compare_by_bound(e: Any, ctx: RewriteContext) -> PrimExpr | None:
    """``i < 10`` -> ``True`` when ``i`` is in ``[0, 8)``; ``x - x == 0`` -> ``True``."""
    if not is_index(e.a.dtype) or not is_pure(e):
        return None
    d = _diff(e)
    b = linear_bound(d, ctx.const_int_bound)
    verdict = decide_compare(type(e), b.min_value, b.max_value)
    if verdict is None and isinstance(e, (EQ, NE)) and d.terms:
        g = coef_gcd(d)
        if d.const % g:  # g*S + k == 0 has no integer solution
            verdict = isinstance(e, NE)
    return None if verdict is None else bool_const(verdict)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _normalized(op: type, m: int, g: int) -> tuple[type, int] | None:
    """``g*S op m`` as ``S op' m'``; of the equal strict / non-strict forms, the one whose
    constant is zero, else the one of ``op``'s kind (``x + 1 <= y`` -> ``x < y``, ``x >= y``
    and ``i < 10`` stay).
    """
    if op is LT:
        strict = (LT, _ceil_div(m, g))
        loose = (LE, strict[1] - 1)
    elif op is LE:
        loose = (LE, m // g)
        strict = (LT, loose[1] + 1)
    elif op is GT:
        strict = (GT, m // g)
        loose = (GE, strict[1] + 1)
    elif op is GE:
        loose = (GE, _ceil_div(m, g))
        strict = (GT, loose[1] - 1)
    else:
        return (op, m // g) if m % g == 0 else None
    if (strict[1] == 0) != (loose[1] == 0):
        return strict if strict[1] == 0 else loose
    return strict if op in (LT, GT) else loose


@LOGIC.rule(LT, LE, GT, GE)
def compare_mod_with_divisor(e: Any, ctx: RewriteContext) -> PrimExpr | None:
    """``x % s < s`` -> ``True``, ``x % s >= s`` -> ``False`` (either side) when ``s >= 1``: a
    floor modulo by a positive divisor lies in ``[0, s)``, also for a symbolic ``s`` whose
    constant bound says nothing of the remainder's (a tile loop's ``(i % seq) < seq`` guard)."""
    if not is_index(e.a.dtype) or not is_pure(e):
        return None
    op, a, b = type(e), e.a, e.b
    if isinstance(b, FloorMod) and not isinstance(a, FloorMod):
        op, a, b = FLIP[op], b, a
    if not (isinstance(a, FloorMod) and structural_equal(a.b, b)):
        return None
    if ctx.const_int_bound(b).min_value < 1:
        return None
    return bool_const(op in (LT, LE))


@LOGIC.rule(*_CMPS)
def compare_canonical(e: Any, ctx: RewriteContext) -> PrimExpr | None:
    """Canonical form of an integer comparison (see the module docstring)."""
    if not is_index(e.a.dtype) or not is_pure(e):
        return None
    d, op = _diff(e), type(e)
    if not d.terms:
        return None
    if next(iter(d.terms.values())) < 0:  # keep the first term on the left, positive
        d, op = d.scaled(-1), FLIP[op]
    g = coef_gcd(d)
    norm = _normalized(op, -d.const, g)
    if norm is None:
        return None
    op, m = norm
    pos = Linear({k: v // g for k, v in d.terms.items() if v > 0})
    neg = Linear({k: -v // g for k, v in d.terms.items() if v < 0}, m)
    lhs = from_linear(pos, e.a.dtype)
    rhs = from_linear(neg, e.a.dtype)
    if lhs is None or rhs is None:
        return None
    new = op(lhs, rhs)
    return None if structural_equal(new, e) else new


# -- and / or / not -------------------------------------------------------------------------------


def _negates(a: PrimExpr, b: PrimExpr) -> bool:
    """Whether ``a`` is syntactically ``not b`` (or the other way round)."""
    return (isinstance(a, Not) and structural_equal(a.a, b)) or (
        isinstance(b, Not) and structural_equal(b.a, a)
    )


@LOGIC.rule(And, Or)
def and_or_const(e: Any, ctx: RewriteContext) -> PrimExpr | None:
    """``x and True`` -> ``x``, ``x and False`` -> ``False``; dually for ``or``."""
    absorbing = 0 if isinstance(e, And) else 1
    for this, other in ((e.a, e.b), (e.b, e.a)):
        v = as_const_int(this)
        if v is None or e.dtype.lanes != 1:
            continue
        if bool(v) == bool(absorbing):
            return bool_const(bool(absorbing)) if is_pure(other) else None
        return other
    return None


@LOGIC.rule(And, Or)
def and_or_same(e: Any, ctx: RewriteContext) -> PrimExpr | None:
    """``x and x`` -> ``x``; ``x and not x`` -> ``False``, ``x or not x`` -> ``True``."""
    if structural_equal(e.a, e.b):
        return e.a
    if e.dtype.lanes == 1 and _negates(e.a, e.b) and is_pure(e):
        return bool_const(isinstance(e, Or))
    return None


_INTERVAL = {
    LT: lambda m: (NEG_INF, m - 1),
    LE: lambda m: (NEG_INF, m),
    GT: lambda m: (m + 1, POS_INF),
    GE: lambda m: (m, POS_INF),
    EQ: lambda m: (m, m),
    NE: lambda m: (m, m),
}


def _interval(e: Any) -> tuple[dict[Atom, int], int, int, bool] | None:
    """An integer comparison as ``S in [lo, hi]`` (or ``S != lo`` when the flag is set), ``S``
    linear with the sign fixed by its terms alone (so ``x == y`` and ``y != x`` share ``S``)."""
    if type(e) not in _INTERVAL or not is_index(e.a.dtype):
        return None
    d, op = _diff(e), type(e)
    if not d.terms:
        return None
    lead = min(d.terms, key=lambda a: a._hash)
    if d.terms[lead] < 0:
        d, op = d.scaled(-1), FLIP[op]
    lo, hi = _INTERVAL[op](-d.const)
    return d.terms, lo, hi, op is NE


def _and_sets(e: Any, a: tuple, b: tuple) -> PrimExpr | None:
    """``e`` (an ``and``) of ``S in/not-in`` sets ``a`` and ``b``, when it is one of them, one
    comparison, or false."""
    (terms, alo, ahi, a_ne), (_, blo, bhi, b_ne) = a, b
    if a_ne and b_ne:
        return None
    if a_ne or b_ne:
        hole, (lo, hi, keep) = (alo, (blo, bhi, e.b)) if a_ne else (blo, (alo, ahi, e.a))
        if not lo <= hole <= hi:
            return keep
        if lo == hi:
            return bool_const(False)
        if hole == lo:
            return _from_interval(terms, lo + 1, hi, e.a.a.dtype)
        return _from_interval(terms, lo, hi - 1, e.a.a.dtype) if hole == hi else None
    lo, hi = max(alo, blo), min(ahi, bhi)
    if lo > hi:
        return bool_const(False)
    return _pick(e, a, b, lo, hi)


def _or_sets(e: Any, a: tuple, b: tuple) -> PrimExpr | None:
    """``e`` (an ``or``) of ``S in/not-in`` sets ``a`` and ``b`` (see `_and_sets`)."""
    (_, alo, ahi, a_ne), (_, blo, bhi, b_ne) = a, b
    if a_ne and b_ne:
        return bool_const(True) if alo != blo else e.a
    if a_ne or b_ne:
        hole, (lo, hi, ne) = (alo, (blo, bhi, e.a)) if a_ne else (blo, (alo, ahi, e.b))
        return bool_const(True) if lo <= hole <= hi else ne
    if ahi + 1 < blo or bhi + 1 < alo:  # a gap between them: not one interval
        return None
    lo, hi = min(alo, blo), max(ahi, bhi)
    if lo == NEG_INF and hi == POS_INF:
        return bool_const(True)
    return _pick(e, a, b, lo, hi)


def _pick(e: Any, a: tuple, b: tuple, lo: int, hi: int) -> PrimExpr | None:
    if (lo, hi) == (a[1], a[2]):
        return e.a
    if (lo, hi) == (b[1], b[2]):
        return e.b
    return _from_interval(a[0], lo, hi, e.a.a.dtype)


@LOGIC.rule(And, Or)
def and_or_same_difference(e: Any, ctx: RewriteContext) -> PrimExpr | None:
    """Comparisons of one linear expression combine as sets of its values.

    ``x < 5 and x < 3`` -> ``x < 3``; ``x < 3 and x > 4`` -> ``False``;
    ``x < 5 or x >= 5`` -> ``True``; ``x < 3 or x < 5`` -> ``x < 5``;
    ``x == 3 or x < 3`` -> ``x <= 3``; ``x <= 3 and x >= 3`` -> ``x == 3``;
    ``x == y and x != y`` -> ``False``; ``x == y or y != x`` -> ``True``;
    ``x != 3 and x < 2`` -> ``x < 2``; ``x != 3 and x <= 3`` -> ``x <= 2``.
    """
    ia, ib = _interval(e.a), _interval(e.b)
    if ia is None or ib is None or ia[0] != ib[0] or not is_pure(e):
        return None
    return _and_sets(e, ia, ib) if isinstance(e, And) else _or_sets(e, ia, ib)


def _from_interval(terms: dict[Atom, int], lo: int, hi: int, dtype: Any) -> PrimExpr | None:
    """``S in [lo, hi]`` as one comparison, when the interval allows it."""
    s = from_linear(Linear(dict(terms)), dtype)
    if lo == NEG_INF:
        op, value = LE, hi
    elif hi == POS_INF:
        op, value = GE, lo
    elif lo == hi:
        op, value = EQ, lo
    else:
        return None
    rhs = make_int(dtype, value)
    return None if s is None or rhs is None else op(s, rhs)


@LOGIC.rule(Not)
def not_const(e: Not, ctx: RewriteContext) -> PrimExpr | None:
    """``not True`` -> ``False``."""
    v = as_const_int(e.a)
    return None if v is None or e.dtype.lanes != 1 else bool_const(not v)


@LOGIC.rule(Not)
def not_not(e: Not, ctx: RewriteContext) -> PrimExpr | None:
    """``not not x`` -> ``x``."""
    return e.a.a if isinstance(e.a, Not) else None


@LOGIC.rule(Not)
def not_compare(e: Not, ctx: RewriteContext) -> PrimExpr | None:
    """``not (a < b)`` -> ``a >= b`` for integer operands (floats may be NaN)."""
    inner = e.a
    if type(inner) not in _NEGATE or not inner.a.dtype.is_integer:
        return None
    return _NEGATE[type(inner)](inner.a, inner.b)
