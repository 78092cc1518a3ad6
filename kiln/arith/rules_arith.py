"""Arithmetic rules: linear canonical form, bound-decided values, min/max, select and let.

All rules here reason about scalar signed integers (`rules.is_index`); other dtypes pass through
untouched (float ``x + 0.0`` is not ``x`` for ``x = -0.0``), except that a ``select`` or an
``if_then_else`` of any dtype whose condition is decided becomes its branch. Terms are only
dropped from expressions without side effects (`rules.is_pure`).
"""

from __future__ import annotations

from typing import Any

from kiln.arith.linear import from_linear, linear_bound, merge_div_mod
from kiln.arith.rules import RewriteContext, RuleSet, is_index, is_pure, make_int
from kiln.ir.structural import structural_equal
from kiln.ir.visitor import post_order_visit
from kiln.tir import builtin
from kiln.tir.expr import (
    Add,
    Call,
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
    PrimExpr,
    Select,
    SizeVar,
    Sub,
    Var,
    as_const_int,
)

ARITH = RuleSet("arith")

_IF_THEN_ELSE = builtin.op("if_then_else")

_POINT_FOLDABLE = (Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max, Select, Cast, Let)


@ARITH.rule(*_POINT_FOLDABLE, Var, SizeVar)
def fold_point_bound(e: Any, ctx: RewriteContext) -> PrimExpr | None:
    """An integer expression whose bound is a single value is that value (``x % 1`` -> ``0``)."""
    if not (e.dtype.is_integer and e.dtype.lanes == 1):
        return None
    b = ctx.const_int_bound(e)
    if not b.is_const or not is_pure(e):
        return None
    return make_int(e.dtype, b.min_value)


# -- linear canonical form ------------------------------------------------------------------------


@ARITH.rule(Add, Sub, Mul)
def canonical_linear(e: Any, ctx: RewriteContext) -> PrimExpr | None:
    """Collect like terms and constants: ``x*2 + y + x*3 - y + 1 + 2`` -> ``x*5 + 3``."""
    if not is_index(e.dtype) or not is_pure(e):
        return None
    lin = merge_div_mod(ctx.linear(e))
    if len(lin.terms) == 1 and lin.const == 0 and next(iter(lin.terms.values())) == 1:
        new: PrimExpr | None = next(iter(lin.terms)).expr
    else:
        new = from_linear(lin, e.dtype)
    if new is None or new is e or structural_equal(new, e):
        return None
    return new


# -- casts ----------------------------------------------------------------------------------------

_CAST_THROUGH = (Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max)


@ARITH.rule(Cast)
def cast_widen_through(e: Cast, ctx: RewriteContext) -> PrimExpr | None:
    """``int64(a + b)`` -> ``int64(a) + int64(b)`` for a wider signed integer type.

    Equal wherever the narrow operation does not overflow (which the input's value assumes), and
    lets terms of both types combine: a flat index ``int64(f // 4) * 64 + int64(f % 4 * 16 + i)``
    becomes ``int64(i) + int64(f) * 16``.
    """
    v = e.value
    if type(v) not in _CAST_THROUGH or not (is_index(e.dtype) and is_index(v.dtype)):
        return None
    if e.dtype.bits <= v.dtype.bits:
        return None
    return type(v)(Cast(e.dtype, v.a), Cast(e.dtype, v.b))


# -- min / max ------------------------------------------------------------------------------------


def diff_bound(a: PrimExpr, b: PrimExpr, ctx: RewriteContext) -> tuple[int, int]:
    """Bounds of ``a - b`` computed on the linear form (so shared terms cancel)."""
    d = linear_bound(ctx.linear(a).plus(ctx.linear(b), -1), ctx.const_int_bound)
    return d.min_value, d.max_value


@ARITH.rule(Min, Max)
def minmax_by_bound(e: Any, ctx: RewriteContext) -> PrimExpr | None:
    """``min(x, y)`` -> ``x`` when ``x <= y`` always (and the mirror cases)."""
    if not is_index(e.dtype):
        return None
    lo, hi = diff_bound(e.a, e.b, ctx)
    a_wins = hi <= 0 if isinstance(e, Min) else lo >= 0
    b_wins = lo >= 0 if isinstance(e, Min) else hi <= 0
    if a_wins and is_pure(e.b):
        return e.a
    if b_wins and is_pure(e.a):
        return e.b
    return None


@ARITH.rule(Min, Max)
def minmax_const_right(e: Any, ctx: RewriteContext) -> PrimExpr | None:
    """``min(3, x)`` -> ``min(x, 3)``."""
    if isinstance(e.a, IntImm) and not isinstance(e.b, IntImm):
        return type(e)(e.b, e.a)
    return None


@ARITH.rule(Min, Max)
def minmax_nested_const(e: Any, ctx: RewriteContext) -> PrimExpr | None:
    """``min(min(x, 3), 5)`` -> ``min(x, 3)``; constants of nested same-kind ops combine."""
    inner = e.a
    if type(inner) is not type(e) or not isinstance(e.b, IntImm):
        return None
    if not isinstance(inner.b, IntImm):
        return None
    pick = min if isinstance(e, Min) else max
    return type(e)(inner.a, IntImm(e.dtype, pick(inner.b.value, e.b.value)))


# -- select ---------------------------------------------------------------------------------------


@ARITH.rule(Select)
def select_decided(e: Select, ctx: RewriteContext) -> PrimExpr | None:
    """``select(True, a, b)`` -> ``a``."""
    c = as_const_int(e.condition)
    if c is None or e.condition.dtype.lanes != 1:
        return None
    keep, drop = (e.true_value, e.false_value) if c else (e.false_value, e.true_value)
    return keep if is_pure(drop) else None


@ARITH.rule(Call)
def if_then_else_decided(e: Call, ctx: RewriteContext) -> PrimExpr | None:
    """``if_then_else(True, a, b)`` -> ``a`` (a scalar condition; unlike `select`, the branch
    not taken is never evaluated, so dropping it changes nothing)."""
    if e.op is not _IF_THEN_ELSE or e.args[0].dtype.lanes != 1:
        return None
    taken = as_const_int(e.args[0])
    return None if taken is None else e.args[1] if taken else e.args[2]


@ARITH.rule(Select)
def select_same_branches(e: Select, ctx: RewriteContext) -> PrimExpr | None:
    """``select(c, a, a)`` -> ``a``."""
    if structural_equal(e.true_value, e.false_value) and is_pure(e.condition):
        return e.true_value
    return None


@ARITH.rule(Select)
def select_not_condition(e: Select, ctx: RewriteContext) -> PrimExpr | None:
    """``select(not c, a, b)`` -> ``select(c, b, a)``."""
    if isinstance(e.condition, Not):
        return Select(e.condition.a, e.false_value, e.true_value)
    return None


# -- let ------------------------------------------------------------------------------------------


def _uses(e: PrimExpr, var: Var) -> bool:
    found = []
    post_order_visit(e, lambda n: found.append(n) if n is var else None)
    return bool(found)


@ARITH.rule(Let)
def let_unused(e: Let, ctx: RewriteContext) -> PrimExpr | None:
    """``let x = v in body`` -> ``body`` when ``body`` does not use ``x``."""
    if not _uses(e.body, e.var) and is_pure(e.value):
        return e.body
    return None
