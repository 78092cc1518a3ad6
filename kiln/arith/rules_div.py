"""Division rules: floor and truncating division and modulo of scalar signed integers.

With ``c > 0`` a constant and the numerator's linear form split as ``c*Q + R``:

- floor semantics hold for every integer: ``(c*Q + R) // c == Q + R // c`` and
  ``(c*Q + R) % c == R % c``; when the bound of ``R`` shows ``R // c`` is one value ``m``, the
  quotient is ``Q + m`` and the remainder ``R - m*c``.
- truncating semantics agree with floor ones only for non-negative operands, so the split is
  used for ``Div``/``Mod`` only when the numerator and ``R`` are provably ``>= 0``. Exact
  division (``c`` divides every coefficient) needs no sign condition.
- a common factor ``g`` of ``c`` and the whole numerator cancels: ``(g*A) // (g*C) == A // C``
  and ``(g*A) % (g*C) == (A % C) * g``, for both semantics.
- nesting: ``(x // a) // b == x // (a*b)`` (both semantics, ``a, b > 0``) and
  ``(x % a) % b == x % b`` when ``b`` divides ``a``.
"""

from __future__ import annotations

from collections.abc import Callable
from math import gcd
from typing import Any

from kiln.arith.linear import Linear, from_linear, linear_bound, to_linear
from kiln.arith.rules import RewriteContext, RuleSet, is_index, is_pure, make_int
from kiln.arith.rules_arith import diff_bound
from kiln.arith.symbolic import below, split_by
from kiln.tir.expr import Add, Div, FloorDiv, FloorMod, IntImm, Mod, Mul, PrimExpr, as_const_int

DIVMOD = RuleSet("divmod")


def _divisor(e: Any) -> int | None:
    """The constant positive divisor of an index division with a pure numerator, else None."""
    c = as_const_int(e.b)
    if c is None or c <= 0 or not is_index(e.dtype) or not is_pure(e.a):
        return None
    return c


def _split(lin: Linear, c: int, floor_const: bool) -> tuple[Linear, Linear]:
    """``lin == c*Q + R``: Q takes the terms whose coefficient ``c`` divides.

    The constant splits so that ``R``'s constant lies in ``[0, c)`` (``floor_const``) or has the
    sign of the original constant and magnitude below ``c`` (otherwise).
    """
    q = {k: v // c for k, v in lin.terms.items() if v % c == 0}
    r = {k: v for k, v in lin.terms.items() if v % c}
    k = lin.const
    kq = k // c if floor_const or k >= 0 else -(-k // c)
    return Linear(q, kq), Linear(r, k - kq * c)


def _divided(lin: Linear, g: int) -> Linear:
    return Linear({k: v // g for k, v in lin.terms.items()}, lin.const // g)


def _build(lin: Linear, e: Any) -> PrimExpr | None:
    return from_linear(lin, e.dtype)


def _single_quotient(r_lo: int, r_hi: int, c: int) -> int | None:
    """The value of ``R // c`` when it is the same over ``[r_lo, r_hi]``, else None."""
    m = r_lo // c
    return m if r_hi // c == m else None


def _is_zero(lin: Linear) -> bool:
    return lin.is_const and lin.const == 0


def _quotient(e: Any, q: Linear, r: Linear, ctx: RewriteContext) -> PrimExpr | None:
    """``Q + R // c`` built for ``e`` (a FloorDiv, or a Div known to act like one)."""
    c = e.b.value
    rb = linear_bound(r, ctx.const_int_bound)
    m = _single_quotient(rb.min_value, rb.max_value, c)
    if m is not None:
        return _build(q.plus(Linear({}, m)), e)
    if _is_zero(q):
        return None
    q_expr, r_expr = _build(q, e), _build(r, e)
    if q_expr is None or r_expr is None:
        return None
    return Add(q_expr, type(e)(r_expr, e.b))


def _remainder(e: Any, q: Linear, r: Linear, ctx: RewriteContext) -> PrimExpr | None:
    """``R % c`` built for ``e`` (a FloorMod, or a Mod known to act like one)."""
    c = e.b.value
    rb = linear_bound(r, ctx.const_int_bound)
    m = _single_quotient(rb.min_value, rb.max_value, c)
    if m is not None:
        return _build(r.plus(Linear({}, -m * c)), e)
    if _is_zero(q):
        return None
    r_expr = _build(r, e)
    return None if r_expr is None else type(e)(r_expr, e.b)


@DIVMOD.rule(FloorDiv, Div, FloorMod, Mod)
def divmod_by_one(e: Any, ctx: RewriteContext) -> PrimExpr | None:
    """``x // 1`` -> ``x`` and ``x % 1`` -> ``0`` (both semantics)."""
    if _divisor(e) != 1:
        return None
    return e.a if isinstance(e, (FloorDiv, Div)) else IntImm(e.dtype, 0)


def _factor_split(lin: Linear, c: int, ctx: RewriteContext) -> tuple[int, Linear, Linear] | None:
    """``lin == g*A + R`` with ``g > 1`` dividing ``c`` and ``0 <= R < g`` for every value in the
    bounds (the largest such ``g`` whose ``A`` has terms), as ``(g, A, R)``."""
    for g in sorted({gcd(c, v) for v in lin.terms.values()} - {1}, reverse=True):
        a = Linear({k: v // g for k, v in lin.terms.items() if v % g == 0})
        if a.is_const:
            continue
        r = Linear({k: v for k, v in lin.terms.items() if v % g}, lin.const)
        rb = linear_bound(r, ctx.const_int_bound)
        m = _single_quotient(rb.min_value, rb.max_value, g)
        if m is not None:
            return g, a.plus(Linear({}, m)), r.plus(Linear({}, -m * g))
    return None


@DIVMOD.rule(FloorDiv, Div, FloorMod, Mod)
def divmod_common_factor(e: Any, ctx: RewriteContext) -> PrimExpr | None:
    """A factor ``g`` of the divisor cancels from ``g*A + R`` when ``0 <= R < g`` (``R`` cannot
    carry into ``A``): ``(x*8 + 7) // 16`` -> ``x // 2``, ``(x*6 + 4) // 8`` -> ``(x*3 + 2) // 4``,
    ``(o*2 + i) // 32`` -> ``o // 16`` for ``i`` in ``[0, 2)``, ``(x*8 + 7) % 16`` ->
    ``(x % 2)*8 + 7``, ``(x*6) % 8`` -> ``((x*3) % 4)*2``. Truncating kinds need a numerator that
    is never negative, unless ``R`` is 0."""
    c = _divisor(e)
    if c is None:
        return None
    return _cancel_factor(e, c, lambda g: None if c == g else IntImm(e.dtype, c // g), ctx)


def _cancel_factor(
    e: Any, c: int, rest_of: Callable[[int], PrimExpr | None], ctx: RewriteContext
) -> PrimExpr | None:
    """The two common-factor rules: ``g`` (dividing the constant ``c`` of the divisor) cancels
    from the numerator; ``rest_of(g)`` is the divisor left (None: nothing, ``c == g``)."""
    lin = to_linear(e.a)
    split = _factor_split(lin, c, ctx)
    if split is None:
        return None
    g, quot, rem = split
    exact = _is_zero(rem)
    if not exact and isinstance(e, (Div, Mod)):
        if linear_bound(lin, ctx.const_int_bound).min_value < 0:
            return None
    a, r = _build(quot, e), _build(rem, e)
    if a is None or r is None:
        return None
    rest = rest_of(g)
    inner = a if rest is None else type(e)(a, rest)
    if isinstance(e, (FloorDiv, Div)):
        return inner
    if rest is None:
        return r
    scaled = Mul(inner, IntImm(e.dtype, g))
    return scaled if exact else Add(scaled, r)


@DIVMOD.rule(FloorDiv, Div, FloorMod, Mod)
def divmod_nested(e: Any, ctx: RewriteContext) -> PrimExpr | None:
    """``(x // 4) // 8`` -> ``x // 32``; ``(x % 8) % 4`` -> ``x % 4`` (same kind only)."""
    c = _divisor(e)
    inner = e.a
    if c is None or type(inner) is not type(e):
        return None
    c_in = _divisor(inner)
    if c_in is None:
        return None
    if isinstance(e, (FloorDiv, Div)):
        both = make_int(e.dtype, c * c_in)
        return None if both is None else type(e)(inner.a, both)
    return type(e)(inner.a, e.b) if c_in % c == 0 else None


@DIVMOD.rule(FloorDiv)
def floordiv_split(e: FloorDiv, ctx: RewriteContext) -> PrimExpr | None:
    """``(i*4 + j) // 4`` -> ``i + j // 4``, and -> ``i`` when ``0 <= j < 4``."""
    c = _divisor(e)
    if c is None:
        return None
    q, r = _split(to_linear(e.a), c, floor_const=False)
    return _quotient(e, q, r, ctx)


@DIVMOD.rule(FloorMod)
def floormod_split(e: FloorMod, ctx: RewriteContext) -> PrimExpr | None:
    """``(i*4 + j) % 4`` -> ``j % 4``, and -> ``j`` when ``0 <= j < 4``."""
    c = _divisor(e)
    if c is None:
        return None
    q, r = _split(to_linear(e.a), c, floor_const=False)
    return _remainder(e, q, r, ctx)


def _trunc_split(e: Any, ctx: RewriteContext) -> tuple[Linear, Linear] | None:
    """The split of a truncating division's numerator when floor rules apply to it."""
    c = _divisor(e)
    if c is None:
        return None
    lin = to_linear(e.a)
    if linear_bound(lin, ctx.const_int_bound).min_value < 0:
        return None
    q, r = _split(lin, c, floor_const=True)
    if linear_bound(r, ctx.const_int_bound).min_value < 0:
        return None
    return q, r


@DIVMOD.rule(Div)
def truncdiv_exact(e: Div, ctx: RewriteContext) -> PrimExpr | None:
    """``(x*8 + 4) / 4`` -> ``x*2 + 1``: exact division needs no sign condition."""
    c = _divisor(e)
    if c is None:
        return None
    lin = to_linear(e.a)
    if lin.const % c or any(v % c for v in lin.terms.values()):
        return None
    return _build(_divided(lin, c), e)


@DIVMOD.rule(Mod)
def truncmod_exact(e: Mod, ctx: RewriteContext) -> PrimExpr | None:
    """``(x*8 + 4) % 4`` -> ``0``; ``x % c`` -> ``x`` when ``|x| < c``."""
    c = _divisor(e)
    if c is None:
        return None
    lin = to_linear(e.a)
    if not (lin.const % c or any(v % c for v in lin.terms.values())):
        return IntImm(e.dtype, 0)
    b = linear_bound(lin, ctx.const_int_bound)
    return e.a if -c < b.min_value and b.max_value < c else None


@DIVMOD.rule(Div)
def truncdiv_split(e: Div, ctx: RewriteContext) -> PrimExpr | None:
    """``(i*4 + j) / 4`` -> ``i`` when ``i*4 + j >= 0`` and ``0 <= j < 4``."""
    parts = _trunc_split(e, ctx)
    return None if parts is None else _quotient(e, *parts, ctx)


@DIVMOD.rule(Mod)
def truncmod_split(e: Mod, ctx: RewriteContext) -> PrimExpr | None:
    """``(i*4 + j) % 4`` -> ``j`` when ``i*4 + j >= 0`` and ``0 <= j < 4``."""
    parts = _trunc_split(e, ctx)
    return None if parts is None else _remainder(e, *parts, ctx)


@DIVMOD.rule(FloorDiv, Div, FloorMod, Mod)
def divmod_small_numerator(e: Any, ctx: RewriteContext) -> PrimExpr | None:
    """``x // n`` -> ``0`` and ``x % n`` -> ``x`` when ``0 <= x < n`` (``n`` any expression)."""
    if not is_index(e.dtype) or isinstance(e.b, IntImm) or not is_pure(e.b):
        return None
    if ctx.const_int_bound(e.a).min_value < 0 or diff_bound(e.a, e.b, ctx)[1] >= 0:
        return None
    if isinstance(e, (FloorDiv, Div)):
        return IntImm(e.dtype, 0) if is_pure(e.a) else None
    return e.a


@DIVMOD.rule(FloorDiv, Div, FloorMod, Mod)
def divmod_symbolic(e: Any, ctx: RewriteContext) -> PrimExpr | None:
    """By a dim ``n == m*d`` that is not a constant (``m`` not constant, ``d`` a constant):
    ``(X*m + R) // n`` -> ``X // d`` and ``(X*m + R) % n`` -> ``(X % d)*m + R`` when
    ``0 <= R < m`` (`kiln.arith.symbolic`: ``R``'s atoms at their symbolic maxima, ``t``
    against ``seq`` for ``t < seq``), the index arithmetic a reshape over symbolic dims
    reads; ``d == 1`` gives ``X`` and ``R``. Truncating kinds need a non-negative numerator.
    ``n`` must not be negative (a dim); it is not zero wherever the input is defined, so an
    exact multiple (``R == 0``) needs no bound: ``(batch*2) // batch`` -> ``2``, as shapes
    traced through a reshape by ``batch`` read."""
    if not is_index(e.dtype) or isinstance(e.b, IntImm) or not is_pure(e.a):
        return None
    if ctx.const_int_bound(e.b).min_value < 0:
        return None
    split = split_by(to_linear(e.a), e.b)
    if split is None:
        return None
    m, d, q, r = split
    exact = _is_zero(r)
    if not exact and (linear_bound(r, ctx.const_int_bound).min_value < 0 or not below(r, m, ctx)):
        return None
    if isinstance(e, (Div, Mod)) and not exact and ctx.const_int_bound(e.a).min_value < 0:
        return None
    q_expr, r_expr = _build(q, e), _build(r, e)
    if q_expr is None or r_expr is None:
        return None
    if d == 1:
        return q_expr if isinstance(e, (FloorDiv, Div)) else r_expr
    if isinstance(e, (FloorDiv, Div)):
        return type(e)(q_expr, IntImm(e.dtype, d))
    rem = Mul(type(e)(q_expr, IntImm(e.dtype, d)), m)
    return rem if _is_zero(r) else Add(rem, r_expr)


@DIVMOD.rule(FloorDiv, Div, FloorMod, Mod)
def divmod_symbolic_common_factor(e: Any, ctx: RewriteContext) -> PrimExpr | None:
    """A constant factor ``g`` of a divisor ``n == d*m`` (``m`` not constant, ``g`` divides
    ``d``) cancels from ``g*A + R`` when ``0 <= R < g``, as in `divmod_common_factor`:
    ``(t*16 + c) // (seq*32)`` -> ``t // (seq*2)`` for ``c`` in ``[0, 16)``, and
    ``(t*16 + c) % (seq*32)`` -> ``(t % (seq*2))*16 + c``."""
    if not is_index(e.dtype) or isinstance(e.b, IntImm) or not is_pure(e.a):
        return None
    ln = to_linear(e.b)
    if ln.const or len(ln.terms) != 1 or ctx.const_int_bound(e.b).min_value < 0:
        return None
    ((m_atom, d),) = ln.terms.items()
    if d <= 1:
        return None
    m = m_atom.expr
    return _cancel_factor(e, d, lambda g: m if d == g else Mul(m, IntImm(e.dtype, d // g)), ctx)
