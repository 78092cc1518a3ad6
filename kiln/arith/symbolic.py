"""Proofs about symbolic sizes: is ``0 <= r < n`` for a dim ``n`` that is not a constant?

Constant bounds cannot show ``s*16 + d < seq*16`` (``s`` in ``[0, seq)``, ``d`` in ``[0, 16)``):
both sides are unbounded. Here the upper end of each atom of ``r`` is an *expression*: a
variable's symbolic maximum (a loop over ``seq`` gives ``seq - 1``, `RewriteContext.symbolic_max`),
``b - 1`` for ``x % b``, a product's factors' maxima multiplied (all factors non-negative), a
constant where the constant bound is finite, and otherwise the atom itself. ``n - 1 - max(r)`` is
then expanded as a polynomial; it is non-negative when its constant is and every other monomial
has a positive coefficient and non-negative atoms. Sound, and enough for the index arithmetic of
reshapes and transposes over symbolic dims, where the terms cancel exactly.
"""

from __future__ import annotations

from typing import Any

from kiln.arith.linear import Atom, Linear, mul_factors, to_linear
from kiln.ir.structural import structural_equal
from kiln.tir.expr import Add, FloorMod, IntImm, Mul, PrimExpr, Sub, Var

Poly = dict[tuple[Atom, ...], int]
"""A polynomial: sorted atoms of a monomial -> coefficient (``()`` is the constant)."""

MAX_TERMS = 64
_INF = 1 << 62


def to_poly(e: PrimExpr) -> Poly | None:
    """``e`` expanded over its atoms (sums and products multiplied out), or None when it has
    more than `MAX_TERMS` monomials."""
    if isinstance(e, IntImm):
        return {(): e.value} if e.value else {}
    if isinstance(e, (Add, Sub)):
        a, b = to_poly(e.a), to_poly(e.b)
        return None if a is None or b is None else _plus(a, b, 1 if isinstance(e, Add) else -1)
    if isinstance(e, Mul):
        a, b = to_poly(e.a), to_poly(e.b)
        return None if a is None or b is None else _times(a, b)
    return {(Atom(e),): 1}


def _plus(a: Poly, b: Poly, sign: int) -> Poly:
    out = dict(a)
    for k, v in b.items():
        new = out.get(k, 0) + sign * v
        if new:
            out[k] = new
        else:
            out.pop(k, None)
    return out


def _times(a: Poly, b: Poly) -> Poly | None:
    if len(a) * len(b) > MAX_TERMS:
        return None
    out: Poly = {}
    for ka, va in a.items():
        for kb, vb in b.items():
            out = _plus(out, {tuple(sorted(ka + kb, key=hash)): va * vb}, 1)
    return out


def _upper(atom: PrimExpr, ctx: Any) -> PrimExpr:
    """An expression at least ``atom`` wherever the bounds hold."""
    if isinstance(atom, Var):
        sym = ctx.symbolic_max(atom)
        if sym is not None:
            return sym
    elif isinstance(atom, FloorMod) and ctx.const_int_bound(atom.b).min_value >= 1:
        return Sub(atom.b, IntImm(atom.dtype, 1))
    elif isinstance(atom, Mul):
        factors = mul_factors(atom)
        if all(ctx.const_int_bound(f).min_value >= 0 for f in factors):
            prod = _upper(factors[0], ctx)
            for f in factors[1:]:
                prod = Mul(prod, _upper(f, ctx))
            return prod
    hi = ctx.const_int_bound(atom).max_value
    return IntImm(atom.dtype, hi) if hi < _INF else atom


def _lower(atom: PrimExpr, ctx: Any) -> PrimExpr:
    """An expression at most ``atom`` wherever the bounds hold."""
    lo = ctx.const_int_bound(atom).min_value
    return IntImm(atom.dtype, lo) if lo > -_INF else atom


def _non_negative(p: Poly, ctx: Any) -> bool:
    for key, coef in p.items():
        if not key:
            if coef < 0:
                return False
        elif coef < 0 or any(ctx.const_int_bound(a.expr).min_value < 0 for a in key):
            return False
    return True


def below(r: Linear, n: PrimExpr, ctx: Any) -> bool:
    """Whether ``r < n`` wherever the bounds hold (see the module docstring)."""
    top: Poly = {(): r.const} if r.const else {}
    for atom, coef in r.items():
        term = to_poly(_upper(atom, ctx) if coef > 0 else _lower(atom, ctx))
        if term is None:
            return False
        top = _plus(top, {k: v * coef for k, v in term.items()}, 1)
    n_poly = to_poly(n)
    if n_poly is None:
        return False
    return _non_negative(_plus(_plus(n_poly, {(): -1}, 1), top, -1), ctx)


def split_by(lin: Linear, n: PrimExpr) -> tuple[PrimExpr, int, Linear, Linear] | None:
    """For a divisor ``n == d * m`` (``m`` an atom, ``d`` a positive constant): ``lin ==
    m*Q + R`` with Q's terms from the atoms that are ``X * m`` or ``X * n`` (any operand order),
    as ``(m, d, Q, R)`` over the original atoms, or None when no term is a multiple of ``m``."""
    ln = to_linear(n)
    if ln.const or len(ln.terms) != 1:
        return None
    ((m_atom, d),) = ln.terms.items()
    if d <= 0:
        return None
    m = m_atom.expr
    q: dict[Atom, int] = {}
    r: dict[Atom, int] = {}
    for atom, c in lin.terms.items():
        x = _cofactor(atom.expr, n, m, d)
        if x is None:
            r[atom] = c
        else:
            key = Atom(x[0])
            q[key] = q.get(key, 0) + c * x[1]
    if not q:
        return None
    return m, d, Linear({k: v for k, v in q.items() if v}, 0), Linear(r, lin.const)


def _cofactor(e: PrimExpr, n: PrimExpr, m: PrimExpr, d: int) -> tuple[PrimExpr, int] | None:
    """``(X, k)`` with ``e == k * X * m``, when ``e`` is ``m``, ``X * m`` or ``X * n``
    (``n == d * m``)."""
    if structural_equal(e, m):
        return IntImm(e.dtype, 1), 1
    if not isinstance(e, Mul):
        return None
    for x, f in ((e.a, e.b), (e.b, e.a)):
        if structural_equal(f, m):
            return x, 1
        if structural_equal(f, n):
            return x, d
    return None
