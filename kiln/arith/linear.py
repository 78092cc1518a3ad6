"""Linear forms of integer expressions: ``c1*t1 + c2*t2 + ... + k`` over opaque atoms.

`to_linear` flattens ``Add``/``Sub`` and multiplication by an integer constant; anything else
(a variable, ``x // 4``, ``min(a, b)``, ``x * y``...) is an atom. Atoms are compared
structurally, so two separately built ``x // 4`` collect into one term. Terms keep the order in
which they first appear, which makes `from_linear` deterministic and idempotent:
``from_linear(to_linear(from_linear(f)))`` rebuilds the same expression.

These rearrangements are ring identities, so they hold in wrapping two's-complement arithmetic
too; `from_linear` only refuses to build a constant that does not fit the dtype.
`merge_div_mod` recombines quotient / remainder pairs (``(x // c)*c + x % c`` is ``x``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from math import gcd
from typing import Any

from kiln.arith.bound import ConstIntBound, bound_add, bound_scale
from kiln.ir.dtype import DataType
from kiln.ir.structural import structural_equal, structural_hash
from kiln.tir.expr import (
    Add,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Mod,
    Mul,
    PrimExpr,
    Sub,
    as_const_int,
)


class Atom:
    """An expression used as a dictionary key by structure (hash computed once)."""

    __slots__ = ("expr", "_hash")

    def __init__(self, expr: PrimExpr) -> None:
        self.expr = expr
        self._hash = structural_hash(expr)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Atom):
            return NotImplemented
        return self.expr is other.expr or (
            self._hash == other._hash and structural_equal(self.expr, other.expr)
        )

    def __repr__(self) -> str:
        return f"Atom({self.expr!r})"


@dataclass
class Linear:
    """``sum(coef * atom) + const``; no stored coefficient is zero."""

    terms: dict[Atom, int] = field(default_factory=dict)
    const: int = 0

    @property
    def is_const(self) -> bool:
        """Whether the form has no terms (only the constant)."""
        return not self.terms

    def items(self) -> Iterator[tuple[PrimExpr, int]]:
        """(atom expression, coefficient) pairs in order of first appearance."""
        for k, c in self.terms.items():
            yield k.expr, c

    def scaled(self, c: int) -> Linear:
        """``self * c``."""
        if c == 0:
            return Linear()
        return Linear({k: v * c for k, v in self.terms.items()}, self.const * c)

    def plus(self, other: Linear, sign: int = 1) -> Linear:
        """``self + sign * other``."""
        terms = dict(self.terms)
        for k, v in other.terms.items():
            new = terms.get(k, 0) + sign * v
            if new:
                terms[k] = new
            else:
                terms.pop(k, None)
        return Linear(terms, self.const + sign * other.const)

    def add_term(self, atom: PrimExpr, coef: int) -> Linear:
        """``self + coef * atom``."""
        return self.plus(Linear({Atom(atom): coef}))


LinearMemo = dict[PrimExpr, "Linear"]
"""Linear forms already computed, by node identity (the simplifier keeps one per call)."""


def to_linear(e: PrimExpr, memo: LinearMemo | None = None) -> Linear:
    """The linear form of ``e`` (see the module docstring for what counts as an atom).

    With ``memo``, the forms of ``e`` and of its subexpressions are looked up there first and
    stored there. NOTE: a memoized form is shared, so no caller modifies a form it gets (the
    methods of `Linear` return new ones). The simplifier's rules rebuild the form of a sum at
    every level of it, each from the forms of its operands: without a memo that is quadratic
    in the number of terms (a flat index of five dimensions: 5.3 -> 1.6 ms to simplify)."""
    if memo is None:
        return _to_linear(e, None)
    hit = memo.get(e)
    if hit is None:
        hit = memo[e] = _to_linear(e, memo)
    return hit


def _to_linear(e: PrimExpr, memo: LinearMemo | None) -> Linear:
    if isinstance(e, IntImm):
        return Linear({}, e.value)
    if isinstance(e, Add):
        return to_linear(e.a, memo).plus(to_linear(e.b, memo))
    if isinstance(e, Sub):
        return to_linear(e.a, memo).plus(to_linear(e.b, memo), -1)
    if isinstance(e, Mul):
        if isinstance(e.b, IntImm):
            return to_linear(e.a, memo).scaled(e.b.value)
        if isinstance(e.a, IntImm):
            return to_linear(e.b, memo).scaled(e.a.value)
    return Linear({Atom(e): 1}, 0)


def _fits(dtype: DataType, value: int) -> bool:
    if dtype.is_int:
        return -(1 << (dtype.bits - 1)) <= value < (1 << (dtype.bits - 1))
    if dtype.is_uint:
        return 0 <= value < (1 << dtype.bits)
    return False


def _term(atom: PrimExpr, coef: int, dtype: DataType) -> PrimExpr:
    return atom if coef == 1 else Mul(atom, IntImm(dtype, coef))


def from_linear(lin: Linear, dtype: DataType) -> PrimExpr | None:
    """Build ``lin`` as an expression of ``dtype``, or None when a constant would not fit.

    Shape: positive terms added in order, then negative terms subtracted, then the constant
    (``x*5 + y - z*2 - 3``). With no positive term a positive constant leads (``10 - x``),
    otherwise the first negative term is multiplied by its coefficient (``x*-1 - 3``).
    """
    if any(not _fits(dtype, abs(c)) for c in lin.terms.values()):
        return None
    if lin.is_const:
        return IntImm(dtype, lin.const) if _fits(dtype, lin.const) else None
    if lin.const and not _fits(dtype, abs(lin.const)):
        return None
    pos = [(a, c) for a, c in lin.items() if c > 0]
    neg = [(a, -c) for a, c in lin.items() if c < 0]
    const = lin.const
    acc: PrimExpr
    if pos:
        acc = _term(pos[0][0], pos[0][1], dtype)
        for a, c in pos[1:]:
            acc = Add(acc, _term(a, c, dtype))
    elif const > 0:
        acc, const = IntImm(dtype, const), 0
    else:
        if not dtype.is_int:
            return None
        (a, c), neg = neg[0], neg[1:]
        acc = Mul(a, IntImm(dtype, -c))
    for a, c in neg:
        acc = Sub(acc, _term(a, c, dtype))
    if const > 0:
        acc = Add(acc, IntImm(dtype, const))
    elif const < 0:
        acc = Sub(acc, IntImm(dtype, -const))
    return acc


def mul_factors(e: PrimExpr) -> list[PrimExpr]:
    """The factors of a product ``e`` (a chain of `Mul`), left to right; ``[e]`` otherwise."""
    factors, todo = [], [e]
    while todo:
        x = todo.pop()
        if isinstance(x, Mul):
            todo += [x.b, x.a]
        else:
            factors.append(x)
    return factors


def linear_bound(lin: Linear, bound: Callable[[PrimExpr], ConstIntBound]) -> ConstIntBound:
    """The interval of ``lin`` from the bounds of its atoms (exact integer arithmetic)."""
    acc = ConstIntBound(lin.const, lin.const)
    for atom, coef in lin.items():
        acc = bound_add(acc, bound_scale(bound(atom), coef))
    return acc


def coef_gcd(lin: Linear) -> int:
    """The gcd of all coefficients (0 for a constant form)."""
    g = 0
    for c in lin.terms.values():
        g = gcd(g, c)
    return g


def _is_division(x: Any, want: type, arg: PrimExpr, c: PrimExpr) -> bool:
    """Whether ``x`` is ``want(arg, c)``, also in the nested form folded by the simplifier:
    ``y // 256`` is ``(y // 16) // 16``."""
    if type(x) is not want:
        return False
    if structural_equal(x.b, c) and structural_equal(x.a, arg):
        return True
    c1, c2, total = as_const_int(getattr(arg, "b", None)), as_const_int(c), as_const_int(x.b)
    if type(arg) is not want or c1 is None or c2 is None or c1 <= 0 or c2 <= 0:
        return False
    return total == c1 * c2 and structural_equal(x.a, arg.a)  # type: ignore[attr-defined]


def _pair(lin: Linear, want: type, arg: PrimExpr, c: PrimExpr, coef: int) -> Atom | None:
    """The atom ``want(arg, c)`` of ``lin`` with coefficient ``coef``, if there is one."""
    for atom, k in lin.terms.items():
        if k == coef and _is_division(atom.expr, want, arg, c):
            return atom
    return None


_DIV_OF_MOD = {FloorMod: FloorDiv, Mod: Div}
_MOD_OF_DIV = {FloorDiv: FloorMod, Div: Mod}


def _symbolic_pair(lin: Linear, want: type, arg: PrimExpr, b: PrimExpr, coef: int) -> Atom | None:
    """The atom ``want(arg, b) * b`` or ``want(arg, b) * (b * c)`` (either operand order) of
    ``lin`` whose coefficient (times ``c``) is ``coef``, if there is one."""
    for atom, k in lin.terms.items():
        e: Any = atom.expr
        if not isinstance(e, Mul):
            continue
        for q, f in ((e.a, e.b), (e.b, e.a)):
            if k * _multiple_of(f, b) == coef and _is_division(q, want, arg, b):
                return atom
    return None


def _multiple_of(f: PrimExpr, b: PrimExpr) -> int:
    """``c`` when ``f`` is ``b`` or ``b * c`` (``c`` a constant), else 0."""
    if structural_equal(f, b):
        return 1
    if isinstance(f, Mul):
        for x, c in ((f.a, f.b), (f.b, f.a)):
            if isinstance(c, IntImm) and structural_equal(x, b):
                return c.value
    return 0


def _merge_pair_step(lin: Linear) -> Linear | None:
    """``(x // c)*(c*m) + (x % c)*m`` -> ``x*m`` once (also ``(x // s)*s*m + (x % s)*m`` for a
    symbolic ``s``), or None when no pair is present."""
    for atom, m in lin.terms.items():
        x: Any = atom.expr
        div_kind = _DIV_OF_MOD.get(type(x))
        if div_kind is None:
            continue
        c = as_const_int(x.b)
        whole = x.a
        if c is None:
            other = _symbolic_pair(lin, div_kind, x.a, x.b, m)
        elif c:
            other = _pair(lin, div_kind, x.a, x.b, m * c)  # type: ignore[arg-type]
            if other is None and div_kind is FloorDiv:
                other, whole = _pair_through_mod(lin, x.a, c, m * c)
        else:
            continue
        if other is not None:
            kept = {k: v for k, v in lin.terms.items() if k != atom and k != other}
            return Linear(kept, lin.const).plus(to_linear(whole).scaled(m))
    return None


def _pair_through_mod(lin: Linear, arg: PrimExpr, c: int, coef: int) -> tuple[Any, Any]:
    """The atom ``(arg % n) // c`` with ``c`` dividing ``n`` and coefficient ``coef``, and its
    ``arg % n``: it pairs with ``arg % c`` (which is ``(arg % n) % c``, the form the simplifier
    leaves); ``(None, arg)`` when there is none."""
    for atom, k in lin.terms.items():
        e: Any = atom.expr
        if k != coef or type(e) is not FloorDiv or as_const_int(e.b) != c:
            continue
        inner = e.a
        n = as_const_int(inner.b) if type(inner) is FloorMod else None
        if n and n % c == 0 and structural_equal(inner.a, arg):
            return atom, inner
    return None, arg


def _rebuild_mod_step(lin: Linear) -> Linear | None:
    """``x*m - (x // c)*(c*m)`` -> ``(x % c)*m`` once, or None when the pattern is absent."""
    for atom, k in lin.terms.items():
        x: Any = atom.expr
        mod_kind = _MOD_OF_DIV.get(type(x))
        c = as_const_int(x.b) if mod_kind is not None else None
        if not c or k % c:
            continue
        sub = to_linear(x.a).scaled(-k // c)
        if sub.terms and all(lin.terms.get(t) == v for t, v in sub.terms.items()):
            rest = Linear({t: v for t, v in lin.terms.items() if t != atom}, lin.const)
            return rest.plus(sub, -1).add_term(mod_kind(x.a, x.b), -k // c)
    return None


def merge_div_mod(lin: Linear) -> Linear:
    """Recombine quotient/remainder pairs in a linear form (floor and truncating kinds).

    ``(x // c)*c + x % c`` -> ``x`` and ``x - (x // c)*c`` -> ``x % c``, scaled by any
    coefficient; both identities hold for every ``x`` and nonzero ``c``. The first also for a
    symbolic divisor ``s`` (``(x // s)*s + x % s``; it holds for every nonzero ``s``, and the
    divisors of index expressions are dims: an index over an empty dim is never computed).
    """
    for step in (_merge_pair_step, _rebuild_mod_step):
        while (new := step(lin)) is not None:
            lin = new
    return lin
