"""Rewrite rules: the rule-table machinery, helpers shared by all rules, and constant folding.

A rule is a small named function ``rule(e, ctx) -> PrimExpr | None``. It returns an expression
equal to ``e`` for every assignment of the free variables within their bounds (same dtype), or
None when it does not apply. Rules see nodes whose children are already simplified; the driver
in `kiln.arith.simplify` re-simplifies whatever a rule returns, so a rule may build new nodes
freely but must make progress (no two rules may undo each other).

Constant folding (this file) is explicit about integer semantics:

- signed ints: the exact mathematical result, folded only when it fits the dtype. A result that
  would overflow is left unfolded (C leaves signed overflow undefined; kiln does not guess).
  ``Div``/``Mod`` truncate toward zero, ``FloorDiv``/``FloorMod`` round toward minus infinity.
- unsigned ints: folded modulo ``2**bits``, which is what C defines.
- division or modulo by a zero constant is never folded.
- floats: only comparisons of two constants and exact casts are folded (float arithmetic would
  need the dtype's rounding).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, Optional, Protocol

from kiln.arith.bound import ConstIntBound
from kiln.arith.linear import Linear
from kiln.ir.dtype import DataType
from kiln.ir.op import CallEffect, Op
from kiln.tir.expr import (
    ARITH_OPS,
    BOOL,
    CMP_OPS,
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    Mul,
    PrimExpr,
    Sub,
    Var,
    as_const_int,
)


class RewriteContext(Protocol):
    """What a rule may ask of the analyzer that runs it."""

    def const_int_bound(self, e: PrimExpr) -> ConstIntBound:
        """The constant interval of ``e`` under the analyzer's variable bounds."""
        ...

    def symbolic_max(self, v: Var) -> PrimExpr | None:
        """The largest value of ``v`` as an expression (``seq - 1`` in a loop over ``seq``)."""
        ...

    def linear(self, e: PrimExpr) -> Linear:
        """`kiln.arith.linear.to_linear` of ``e``, memoized for the call (never modify it)."""
        ...


Rule = Callable[[Any, RewriteContext], Optional[PrimExpr]]


class RuleSet:
    """A named, ordered table of rules keyed by node class."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.table: dict[type, list[Rule]] = {}

    def rule(self, *types: type) -> Callable[[Rule], Rule]:
        """Decorator registering a rule for the given node classes (in definition order)."""

        def register(fn: Rule) -> Rule:
            for t in types:
                self.table.setdefault(t, []).append(fn)
            return fn

        return register


def rule_table(*sets: RuleSet) -> dict[type, tuple[Rule, ...]]:
    """Merge rule sets into one table; for each class, earlier sets' rules run first."""
    merged: dict[type, list[Rule]] = {}
    for s in sets:
        for t, rules in s.table.items():
            merged.setdefault(t, []).extend(rules)
    return {t: tuple(rs) for t, rs in merged.items()}


# -- helpers shared by the rule files -------------------------------------------------------------


def is_index(dtype: DataType) -> bool:
    """Scalar signed integer: the dtypes the arithmetic rules reason about."""
    return dtype.is_int and dtype.lanes == 1


def fits(dtype: DataType, value: int) -> bool:
    """Whether ``value`` is representable in the integer (or bool) ``dtype``."""
    if dtype.is_bool:
        return value in (0, 1)
    if dtype.is_int:
        return -(1 << (dtype.bits - 1)) <= value < (1 << (dtype.bits - 1))
    if dtype.is_uint:
        return 0 <= value < (1 << dtype.bits)
    return False


def make_int(dtype: DataType, value: int) -> IntImm | None:
    """``IntImm(dtype, value)``, or None when the value does not fit."""
    return IntImm(dtype, value) if fits(dtype, value) else None


def bool_const(value: bool, lanes: int = 1) -> IntImm:
    """The bool immediate ``True`` / ``False``."""
    return IntImm(BOOL.with_lanes(lanes), int(bool(value)))


def truncdiv(a: int, b: int) -> int:
    """C division of ints: rounds toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def truncmod(a: int, b: int) -> int:
    """C remainder: has the sign of ``a``."""
    return a - b * truncdiv(a, b)


_INT_OPS: dict[type, Callable[[int, int], int]] = {
    Add: lambda a, b: a + b,
    Sub: lambda a, b: a - b,
    Mul: lambda a, b: a * b,
    Div: truncdiv,
    Mod: truncmod,
    FloorDiv: lambda a, b: a // b,
    FloorMod: lambda a, b: a % b,
    Min: min,
    Max: max,
}
_DIVISIONS = (Div, Mod, FloorDiv, FloorMod)
_CMP: dict[type, Callable[[Any, Any], bool]] = {
    EQ: lambda a, b: a == b,
    NE: lambda a, b: a != b,
    LT: lambda a, b: a < b,
    LE: lambda a, b: a <= b,
    GT: lambda a, b: a > b,
    GE: lambda a, b: a >= b,
}


def eval_int_op(op: type, a: int, b: int) -> int | None:
    """The exact result of the integer operation ``op``; None for division by zero."""
    if b == 0 and op in _DIVISIONS:
        return None
    return _INT_OPS[op](a, b)


def eval_compare(op: type, a: Any, b: Any) -> bool:
    """The result of the comparison ``op`` on two Python numbers."""
    return _CMP[op](a, b)


_PURE: dict[int, tuple[Any, bool]] = {}
"""`is_pure`'s answers by node id (with the node, so an id is never reused while remembered)."""
PURE_MEMO_SIZE = 1 << 16


def is_pure(e: Any) -> bool:
    """True when evaluating ``e`` has no effect besides its value (so it may be dropped).
    NOTE: memoized (`_PURE`): the rules ask it of every level of a sum, which walked the
    whole sum each time (Swin's window-partition indices: 4.4M calls, 29 of 112 s profiled)."""
    if not isinstance(e, PrimExpr) or isinstance(e, (IntImm, Var)):
        return True
    known = _PURE.get(id(e))
    if known is not None and known[0] is e:
        return known[1]
    pure = True
    if isinstance(e, Call):
        op = e.op
        pure = isinstance(op, Op) and op.effect.value <= CallEffect.PURE.value
    for name in type(e).field_names():
        if not pure:
            break
        v = getattr(e, name)
        if isinstance(v, PrimExpr):
            pure = is_pure(v)
        elif isinstance(v, tuple):
            pure = all(is_pure(x) for x in v)
    if len(_PURE) >= PURE_MEMO_SIZE:
        _PURE.clear()
    _PURE[id(e)] = (e, pure)
    return pure


# -- constant folding ---------------------------------------------------------------------------

FOLD = RuleSet("fold")


@FOLD.rule(*ARITH_OPS)
def fold_int_arith(e: Any, ctx: RewriteContext) -> PrimExpr | None:
    """``3 + 4`` -> ``7`` with the semantics in the module docstring."""
    a, b = as_const_int(e.a), as_const_int(e.b)
    if a is None or b is None or not e.dtype.is_integer or e.dtype.lanes != 1:
        return None
    value = eval_int_op(type(e), a, b)
    if value is None:
        return None
    if e.dtype.is_uint:
        value %= 1 << e.dtype.bits
    return make_int(e.dtype, value)


@FOLD.rule(*CMP_OPS)
def fold_compare(e: Any, ctx: RewriteContext) -> PrimExpr | None:
    """``3 < 4`` -> ``True``; also for two float constants."""
    a, b = e.a, e.b
    both_int = isinstance(a, IntImm) and isinstance(b, IntImm)
    both_float = isinstance(a, FloatImm) and isinstance(b, FloatImm)
    if not (both_int or both_float) or e.dtype.lanes != 1:
        return None
    return bool_const(eval_compare(type(e), a.value, b.value))


@FOLD.rule(Cast)
def cast_identity(e: Cast, ctx: RewriteContext) -> PrimExpr | None:
    """``cast(t, x)`` -> ``x`` when ``x`` already has type ``t``."""
    return e.value if e.value.dtype == e.dtype else None


_EXACT_FLOAT_BITS = {("float", 16): 11, ("float", 32): 24, ("float", 64): 53, ("bfloat", 16): 8}
_STRUCT_FLOAT = {("float", 16): "e", ("float", 32): "f", ("float", 64): "d"}


@FOLD.rule(Cast)
def fold_cast(e: Cast, ctx: RewriteContext) -> PrimExpr | None:
    """Cast of a constant, folded only when the result is exact (or C defines the wrap)."""
    v, dt = e.value, e.dtype
    if dt.lanes != 1 or not isinstance(v, (IntImm, FloatImm)):
        return None
    if dt.is_bool:
        return bool_const(v.value != 0)
    if isinstance(v, IntImm):
        if dt.is_uint:
            return IntImm(dt, v.value % (1 << dt.bits))
        if dt.is_int:
            return make_int(dt, v.value)
        bits = _EXACT_FLOAT_BITS.get((dt.kind, dt.bits))
        return FloatImm(dt, float(v.value)) if bits and abs(v.value) <= 1 << bits else None
    f = v.value
    if dt.is_integer:
        if f != f or f in (float("inf"), float("-inf")):
            return None
        return make_int(dt, int(f))  # int() truncates toward zero, like C
    fmt = _STRUCT_FLOAT.get((dt.kind, dt.bits))
    if fmt is None:
        return None
    try:
        rounded = struct.unpack(fmt, struct.pack(fmt, f))[0]
    except (OverflowError, struct.error):
        return None
    return FloatImm(dt, f) if rounded == f or f != f else None
