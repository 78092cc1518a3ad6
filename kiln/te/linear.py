"""Affine forms of integer index expressions: the arithmetic TE lowering needs.

An `Affine` is ``const + sum(coef * atom)`` with integer coefficients; an atom is a variable or a
non-affine subexpression (``x // 4``, ``x * n``), compared by structure. Turning an index into
an affine form and back cancels terms (``io*4 + ii - io*4`` is ``ii``), folds constants and
applies the floor-division identities ``(c*X + Y) // c == X + Y // c`` and
``(c*X + Y) % c == Y % c``, so lowered TIR reads like hand-written loops without needing the
full simplifier.
"""

from __future__ import annotations

from typing import Any

from kiln.errors import IRError
from kiln.ir.dtype import DataType
from kiln.tir.expr import (
    Add,
    BinaryOp,
    Call,
    Cast,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    PrimExpr,
    Sub,
    Var,
    convert,
)

Key = tuple[Any, ...]


def expr_key(e: Any) -> Key:
    """A hashable key equal for structurally identical expressions (variables by identity)."""
    if isinstance(e, Var):
        return ("var", id(e))
    if isinstance(e, IntImm):
        return ("int", str(e.dtype), e.value)
    if isinstance(e, FloatImm):
        return ("float", str(e.dtype), e.value)
    if isinstance(e, BinaryOp):
        return (type(e).__name__, expr_key(e.a), expr_key(e.b))
    if isinstance(e, Cast):
        return ("cast", str(e.dtype), expr_key(e.value))
    if isinstance(e, Call):
        return ("call", e.op_name, str(e.dtype), *(expr_key(a) for a in e.args))
    return ("id", id(e))


class Affine:
    """``const + sum(coef * atom)`` over one integer dtype; terms keep their first-seen order."""

    __slots__ = ("terms", "const", "dtype")

    def __init__(
        self, dtype: DataType, const: int = 0, terms: dict[Key, tuple[PrimExpr, int]] | None = None
    ) -> None:
        self.dtype = dtype
        self.const = const
        self.terms: dict[Key, tuple[PrimExpr, int]] = dict(terms or {})

    @staticmethod
    def atom(e: PrimExpr) -> Affine:
        """``1 * e``: ``e`` as a single term."""
        return Affine(e.dtype, 0, {expr_key(e): (e, 1)})

    @property
    def is_const(self) -> bool:
        return not self.terms

    def __add__(self, o: Affine) -> Affine:
        out = Affine(self.dtype, self.const + o.const, self.terms)
        for k, (atom, c) in o.terms.items():
            c0 = out.terms[k][1] if k in out.terms else 0
            if c0 + c == 0:
                out.terms.pop(k, None)
            else:
                out.terms[k] = (atom, c0 + c)
        return out

    def scale(self, c: int) -> Affine:
        """Every coefficient and the constant multiplied by ``c``."""
        if c == 0:
            return Affine(self.dtype)
        terms = {k: (a, v * c) for k, (a, v) in self.terms.items()}
        return Affine(self.dtype, self.const * c, terms)

    def __sub__(self, o: Affine) -> Affine:
        return self + o.scale(-1)

    def plus(self, c: int) -> Affine:
        """The form with ``c`` added to its constant."""
        return Affine(self.dtype, self.const + c, self.terms)

    def divisible_by(self, c: int) -> bool:
        """True when every coefficient and the constant are multiples of ``c``."""
        return self.const % c == 0 and all(v % c == 0 for _, v in self.terms.values())

    def to_expr(self) -> PrimExpr:
        """The form as a tidy expression: ``a*4 + b - 3``."""
        out: PrimExpr | None = None
        for atom, c in self.terms.values():
            if out is None:
                out = atom if c == 1 else Mul(atom, convert(c, self.dtype))
            elif c > 0:
                out = Add(out, atom if c == 1 else Mul(atom, convert(c, self.dtype)))
            else:
                out = Sub(out, atom if c == -1 else Mul(atom, convert(-c, self.dtype)))
        if out is None:
            return convert(self.const, self.dtype)
        if self.const > 0:
            return Add(out, convert(self.const, self.dtype))
        if self.const < 0:
            return Sub(out, convert(-self.const, self.dtype))
        return out

    def __repr__(self) -> str:
        parts = [f"{c}*{a!r}" for a, c in self.terms.values()]
        return f"Affine({' + '.join(parts + [str(self.const)])})"


def to_affine(e: PrimExpr) -> Affine:
    """The affine form of an integer expression (non-affine parts become atoms)."""
    if isinstance(e, IntImm) and e.dtype.is_integer:
        return Affine(e.dtype, e.value)
    if isinstance(e, Var):
        return Affine.atom(e)
    if isinstance(e, Add):
        return to_affine(e.a) + to_affine(e.b)
    if isinstance(e, Sub):
        return to_affine(e.a) - to_affine(e.b)
    if isinstance(e, Mul):
        return _mul(e)
    if isinstance(e, (FloorDiv, FloorMod)):
        return _floor(e)
    if isinstance(e, (Min, Max)):
        return _minmax(e)
    return Affine.atom(e)


def _mul(e: Mul) -> Affine:
    a, b = to_affine(e.a), to_affine(e.b)
    if b.is_const:
        return a.scale(b.const)
    if a.is_const:
        return b.scale(a.const)
    return Affine.atom(Mul(a.to_expr(), b.to_expr()))


def _floor(e: FloorDiv | FloorMod) -> Affine:
    a, b = to_affine(e.a), to_affine(e.b)
    if not b.is_const or b.const <= 0:
        return Affine.atom(type(e)(a.to_expr(), b.to_expr()))
    c = b.const
    exact = Affine(a.dtype, (a.const // c) * c)
    rest = Affine(a.dtype, a.const % c)
    for k, (atom, v) in a.terms.items():
        target = exact if v % c == 0 else rest
        target.terms[k] = (atom, v)
    if isinstance(e, FloorMod):
        if rest.is_const:
            return Affine(a.dtype, rest.const % c)
        return Affine.atom(FloorMod(rest.to_expr(), convert(c, a.dtype)))
    terms = {k: (atom, v // c) for k, (atom, v) in exact.terms.items()}
    quotient = Affine(a.dtype, exact.const // c, terms)
    if rest.is_const:
        return quotient.plus(rest.const // c)
    if c == 1:
        return quotient + rest
    return quotient + Affine.atom(FloorDiv(rest.to_expr(), convert(c, a.dtype)))


def _minmax(e: Min | Max) -> Affine:
    a, b = to_affine(e.a), to_affine(e.b)
    diff = a - b
    if diff.is_const:
        pick_a = diff.const <= 0 if isinstance(e, Min) else diff.const >= 0
        return a if pick_a else b
    return Affine.atom(type(e)(a.to_expr(), b.to_expr()))


def simplify_index(e: PrimExpr) -> PrimExpr:
    """``e`` with its affine structure normalised; non-integer expressions pass through."""
    if not isinstance(e, PrimExpr) or not e.dtype.is_integer or e.dtype.lanes != 1:
        return e
    try:
        return to_affine(e).to_expr()
    except IRError:  # mixed index dtypes: leave the expression as the user wrote it
        return e


def ceildiv(a: PrimExpr, b: int | PrimExpr) -> PrimExpr:
    """``ceil(a / b)`` for non-negative ``a`` and positive ``b``, folded when possible."""
    fa = to_affine(a)
    fb = to_affine(convert(b, a.dtype))
    if fb.is_const:
        if fa.is_const:
            return convert(-(-fa.const // fb.const), a.dtype)
        if fa.divisible_by(fb.const):
            return to_affine(FloorDiv(a, fb.to_expr())).to_expr()
        return simplify_index(FloorDiv(a + (fb.const - 1), fb.to_expr()))
    return FloorDiv(simplify_index(a + fb.to_expr() - 1), fb.to_expr())


def const_value(e: PrimExpr) -> int | None:
    """The integer value of ``e`` when it folds to a constant, else None."""
    if isinstance(e, IntImm):
        return e.value
    if not isinstance(e, PrimExpr) or not e.dtype.is_integer:
        return None
    try:
        f = to_affine(e)
    except IRError:
        return None
    return f.const if f.is_const else None
