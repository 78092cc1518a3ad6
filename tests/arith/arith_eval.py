"""Test helpers for kiln.arith: an exact evaluator, an infix printer and hypothesis strategies.

The evaluator computes with unbounded Python ints and raises `Overflow` when any signed
intermediate leaves its dtype's range, so a test can skip inputs whose C behaviour is undefined
instead of comparing against a wrapped value. Division follows C (`Div`/`Mod` truncate) or Python
(`FloorDiv`/`FloorMod` floor) semantics exactly.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from hypothesis import strategies as st

from kiln.tir import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Cast,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Select,
    SizeVar,
    Sub,
    Var,
)
from kiln.tir.expr import int_range
from kiln.tir.functor import substitute


class Overflow(Exception):
    """A signed intermediate left its dtype's range (undefined behaviour in C)."""


def _truncdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


_BIN = {
    Add: lambda a, b: a + b,
    Sub: lambda a, b: a - b,
    Mul: lambda a, b: a * b,
    Div: _truncdiv,
    Mod: lambda a, b: a - b * _truncdiv(a, b),
    FloorDiv: lambda a, b: a // b,
    FloorMod: lambda a, b: a % b,
    Min: min,
    Max: max,
    EQ: lambda a, b: int(a == b),
    NE: lambda a, b: int(a != b),
    LT: lambda a, b: int(a < b),
    LE: lambda a, b: int(a <= b),
    GT: lambda a, b: int(a > b),
    GE: lambda a, b: int(a >= b),
    And: lambda a, b: int(bool(a) and bool(b)),
    Or: lambda a, b: int(bool(a) or bool(b)),
}


def _check(value: int, e: PrimExpr) -> int:
    dt = e.dtype
    if dt.is_int and not -(1 << (dt.bits - 1)) <= value < (1 << (dt.bits - 1)):
        raise Overflow(f"{value} does not fit {dt}")
    return value


def evaluate(e: PrimExpr, env: dict[Var, int]) -> int:
    """The exact value of ``e`` (bools as 0/1) with variables from ``env``."""
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, Var):
        return env[e]
    op = _BIN.get(type(e))
    if op is not None:
        return _check(op(evaluate(e.a, env), evaluate(e.b, env)), e)
    if isinstance(e, Not):
        return int(not evaluate(e.a, env))
    if isinstance(e, Select):
        c, t, f = (evaluate(x, env) for x in (e.condition, e.true_value, e.false_value))
        return t if c else f
    if isinstance(e, Cast):
        v = evaluate(e.value, env)
        return int(v != 0) if e.dtype.is_bool else _check(v, e)
    if isinstance(e, Let):
        return evaluate(e.body, {**env, e.var: evaluate(e.value, env)})
    raise TypeError(f"cannot evaluate {type(e).__name__}")


_SYM = {
    Add: "+",
    Sub: "-",
    Mul: "*",
    Div: "/",
    Mod: "%t",
    FloorDiv: "//",
    FloorMod: "%",
    EQ: "==",
    NE: "!=",
    LT: "<",
    LE: "<=",
    GT: ">",
    GE: ">=",
    And: "and",
    Or: "or",
}


def show(e: Any) -> str:
    """A compact infix rendering for assertion messages (``/`` and ``%t`` truncate)."""
    if isinstance(e, IntImm):
        return str(bool(e.value)) if e.dtype.is_bool else str(e.value)
    if isinstance(e, Var):
        return e.name
    if type(e) in _SYM:
        return f"({show(e.a)} {_SYM[type(e)]} {show(e.b)})"
    if isinstance(e, (Min, Max)):
        return f"{type(e).__name__.lower()}({show(e.a)}, {show(e.b)})"
    if isinstance(e, Not):
        return f"not {show(e.a)}"
    if isinstance(e, Select):
        return f"select({show(e.condition)}, {show(e.true_value)}, {show(e.false_value)})"
    if isinstance(e, Cast):
        return f"{e.dtype}({show(e.value)})"
    if isinstance(e, Let):
        return f"(let {e.var.name} = {show(e.value)} in {show(e.body)})"
    return repr(e)


# -- hypothesis strategies --------------------------------------------------------------------
# NOTE: strategies are built once per (variables, depth) and reused; creating strategy objects
# inside draws costs hypothesis most of its time.


@dataclass
class Case:
    """Variables, the bounds the analyzer is told, and points (within them) to evaluate at."""

    bounds: dict[Var, tuple[int, int]]
    points: list[dict[Var, int]]


def make_vars(dtype: str = "int32") -> tuple[Var, ...]:
    return (Var("x", dtype), Var("y", dtype), SizeVar("n", dtype))


_SEED = st.integers(0, (1 << 64) - 1)


def _near_limits(bits: int) -> list[int]:
    """Values around the ends of a signed ``bits``-bit range and around half of it."""
    top = 1 << (bits - 1)
    return [top - 1, -top, top // 2, -(top // 2), top // 4 * 3, -(top // 4 * 3)]


@st.composite
def cases(draw: Any, variables: tuple[Var, ...], n_points: int = 4, near: bool = False) -> Case:
    """Random bounds (about one variable in four left unbounded) and points inside them.

    With ``near``, about half the variables get bounds around ``+-2**(bits-2)`` and
    ``+-2**(bits-1)`` (the ends of the dtype), the rest small ones.
    NOTE: one drawn seed drives a `random.Random`: drawing every bound and point through
    hypothesis cost most of the tests' time, and shrinking them helps little.
    """
    return make_case(random.Random(draw(_SEED)), variables, n_points, near)


def make_case(rnd: random.Random, variables: tuple[Var, ...], n_points: int, near: bool) -> Case:
    """The `Case` of `cases`, drawn from ``rnd``."""
    bits = variables[0].dtype.bits
    lo_min, hi_max = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    bounds: dict[Var, tuple[int, int]] = {}
    ranges: dict[Var, tuple[int, int]] = {}
    for v in variables:
        if near and rnd.random() < 0.5:
            lo = rnd.choice(_near_limits(bits)) + rnd.randint(-64, 64)
            lo = min(max(lo, 0 if isinstance(v, SizeVar) else lo_min), hi_max)
            hi = min(lo + rnd.randint(0, rnd.choice((64, 1 << 20))), hi_max)
        else:
            lo = rnd.randint(-20, 20)
            lo = abs(lo) if isinstance(v, SizeVar) else lo
            hi = lo + rnd.randint(0, 20)
        ranges[v] = (lo, hi)
        if rnd.random() < 0.75:
            bounds[v] = (lo, hi)
    points = [{v: _point(rnd, lo, hi) for v, (lo, hi) in ranges.items()} for _ in range(n_points)]
    return Case(bounds, points)


def _point(rnd: random.Random, lo: int, hi: int) -> int:
    """A value in ``[lo, hi]``: an end one time in four, else uniform."""
    pick = rnd.random()
    return lo if pick < 0.125 else hi if pick < 0.25 else rnd.randint(lo, hi)


_CONSTS = st.integers(-12, 12)
_DIVISORS = st.sampled_from([-7, -4, -3, -2, -1, 1, 2, 3, 4, 5, 8, 16])
_PLAIN = st.sampled_from([Add, Sub, Mul, Min, Max])
_DIVS = st.sampled_from([FloorDiv, FloorMod, Div, Mod])
_CMPS = st.sampled_from([EQ, NE, LT, LE, GT, GE])


def _apply(op: Any, a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return op(a, b)


@lru_cache(maxsize=None)
def int_exprs(variables: tuple[Var, ...], depth: int = 4) -> st.SearchStrategy[PrimExpr]:
    """Random integer expressions; divisors are nonzero constants or guarded to be nonzero."""
    dtype = variables[0].dtype
    leaf = st.one_of(st.sampled_from(variables), _CONSTS.map(lambda v: IntImm(dtype, v)))
    if depth == 0:
        return leaf
    sub = int_exprs(variables, depth - 1)
    return st.one_of(
        leaf,
        st.builds(_apply, _PLAIN, sub, sub),
        st.builds(_apply, _PLAIN, sub, sub),
        st.builds(_apply, _DIVS, sub, _divisors(variables, depth - 1)),
        st.builds(Select, bool_exprs(variables, depth - 1), sub, sub),
    )


@lru_cache(maxsize=None)
def _divisors(variables: tuple[Var, ...], depth: int) -> st.SearchStrategy[PrimExpr]:
    dtype = variables[0].dtype
    inner = int_exprs(variables, min(depth, 2))
    one, minus_one = IntImm(dtype, 1), IntImm(dtype, -1)
    return st.one_of(
        _DIVISORS.map(lambda v: IntImm(dtype, v)),
        inner.map(lambda e: Max(e, one)),
        inner.map(lambda e: Min(e, minus_one)),
    )


@lru_cache(maxsize=None)
def bool_exprs(variables: tuple[Var, ...], depth: int = 3) -> st.SearchStrategy[PrimExpr]:
    """Random conditions: comparisons of integer expressions joined by and/or/not."""
    ints = int_exprs(variables, max(depth - 1, 0))
    compare = st.builds(_apply, _CMPS, ints, ints)
    if depth <= 1:
        return compare
    sub = bool_exprs(variables, depth - 1)
    return st.one_of(
        compare,
        compare,
        sub.map(Not),
        st.builds(And, sub, sub),
        st.builds(Or, sub, sub),
    )


# -- near the limits ------------------------------------------------------------------------------
# NOTE: expressions near the limits are drawn from a `random.Random` seeded by hypothesis (one
# draw per example), not built by strategies: that is several times faster, which buys the
# number of cases; a failure prints the expression, the bounds and the point.

_NEAR_CONSTS = (31, -31, 127, 128, 1000, 65536)
_NEAR_DIVISORS = (-128, -7, -3, -1, 1, 2, 3, 4, 8, 16, 128, 65536, 1 << 30)
_OPS = (Add, Sub, Mul, Min, Max)
_DIV_OPS = (FloorDiv, FloorMod, Div, Mod)
_CMP_OPS = (EQ, NE, LT, LE, GT, GE)


class _NearGen:
    """Expressions like `int_exprs` / `bool_exprs`, with constants near the dtype's ends."""

    def __init__(self, rnd: random.Random, variables: tuple[Var, ...]) -> None:
        self.rnd, self.vars, self.dtype = rnd, variables, variables[0].dtype
        self.lo, self.hi = int_range(self.dtype)

    def const(self) -> IntImm:
        r, rnd = self.rnd.random(), self.rnd
        if r < 0.5:
            v = rnd.randint(-12, 12)
        elif r < 0.75:
            v = rnd.choice(_near_limits(self.dtype.bits)) + rnd.randint(-64, 64)
        else:
            v = rnd.choice(_NEAR_CONSTS)
        return IntImm(self.dtype, min(max(v, self.lo), self.hi))

    def int(self, depth: int) -> PrimExpr:
        r = self.rnd.random()
        if depth == 0 or r < 0.2:
            return self.rnd.choice(self.vars) if self.rnd.random() < 0.6 else self.const()
        if r < 0.6:
            return self.rnd.choice(_OPS)(self.int(depth - 1), self.int(depth - 1))
        if r < 0.85:
            return self.rnd.choice(_DIV_OPS)(self.int(depth - 1), self.divisor(depth - 1))
        return Select(self.bool(depth - 1), self.int(depth - 1), self.int(depth - 1))

    def divisor(self, depth: int) -> PrimExpr:
        r = self.rnd.random()
        if r < 0.6:
            return IntImm(self.dtype, self.rnd.choice(_NEAR_DIVISORS))
        inner = self.int(min(depth, 2))
        return Max(inner, IntImm(self.dtype, 1)) if r < 0.8 else Min(inner, IntImm(self.dtype, -1))

    def bool(self, depth: int) -> PrimExpr:
        r = self.rnd.random()
        if depth <= 1 or r < 0.4:
            sub = max(depth - 1, 0)
            return self.rnd.choice(_CMP_OPS)(self.int(sub), self.int(sub))
        if r < 0.6:
            return Not(self.bool(depth - 1))
        return (And if r < 0.8 else Or)(self.bool(depth - 1), self.bool(depth - 1))


def _near_case(variables: tuple[Var, ...], boolean: bool, seed: int) -> tuple[PrimExpr, Case]:
    rnd = random.Random(seed)
    case = make_case(rnd, variables, 4, near=True)
    gen = _NearGen(rnd, variables)
    e = gen.bool(3) if boolean else gen.int(4)
    shift: dict[Var, PrimExpr] = {}
    for v in variables:  # v - k with k near v's lower end: big values, small differences
        if rnd.random() < 0.5:
            lo = case.bounds[v][0] if v in case.bounds else case.points[0][v]
            k = min(max(lo + rnd.randint(-8, 8), gen.lo), gen.hi)
            shift[v] = Sub(v, IntImm(gen.dtype, k))
    return (substitute(e, shift) if shift else e), case


def near_limit_cases(
    variables: tuple[Var, ...], boolean: bool = False
) -> st.SearchStrategy[tuple[PrimExpr, Case]]:
    """(expression, case) pairs near the limits: bounds and constants around ``+-2**(bits-2)``
    and ``+-2**(bits-1)``, variables often shifted by a constant near their lower bound (the
    shape in which a rearrangement such as ``v*c - k*c`` overflows where the input does not)."""
    return _SEED.map(lambda seed: _near_case(variables, boolean, seed))
