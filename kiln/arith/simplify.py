"""The `Analyzer`: bound analysis plus a rule-driven simplifier of integer index expressions.

``Analyzer.simplify(e)`` rewrites bottom-up: children first, then the rules for the node's class
(`RULES`, one visible list of rule sets) are tried in order; the first that fires returns a new
expression, which is simplified again. A node no rule changes is final. One exception to
children-first: an ``if_then_else`` whose condition simplifies to a constant becomes its branch
taken, simplified, and the other branch is never simplified (the same result, at the cost of
one branch). Results, and the linear forms the rules compute (`Analyzer.linear`), are memoized
per call by node identity, so shared subtrees are simplified once.

Guarantees: the result has the input's dtype, and at every assignment of the free variables
within the analyzer's bounds where the input evaluates without signed overflow (and no divisor
is zero), the result evaluates to the same value, without overflow either. Rules may reason on
that assumption (bounds are clamped to the dtype), but the driver refuses a rewrite that could
*introduce* an overflow: every node a rule builds, except the one replacing the rewritten node
(whose value is that node's), must provably stay in its dtype's range given the bounds of its
operands (`kiln.arith.overflow`). Nodes already seen in this call (the input's and those
of accepted rewrites) are trusted: they do not overflow wherever the input does not.

Unchanged subtrees keep their identity; an expression that is already simple comes back as the
same object. A cap on rule applications (`MAX_STEPS`) makes termination unconditional; hitting
it sets ``hit_step_limit`` and returns an equal expression. An expression nested deeper than
Python's recursion limit allows (a chain of a few hundred additions) comes back unchanged: the
rewrite driver and linear forms recurse once per level, and their cost grows with the square of
the depth, so deep trees are not worth walking. Bound analysis (`const_int_bound`) has no such
limit (it walks through `kiln.ir.deep`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from kiln.arith.bound import (
    BoundAnalyzer,
    BoundLike,
    ConstIntBound,
    as_bound,
    bound_add,
    normalize_var_bounds,
)
from kiln.arith.constraint import constraint_bounds
from kiln.arith.linear import Linear, LinearMemo, mul_factors, to_linear
from kiln.arith.overflow import introduces_overflow
from kiln.arith.rules import FOLD, rule_table
from kiln.arith.rules_arith import ARITH
from kiln.arith.rules_div import DIVMOD
from kiln.arith.rules_logic import LOGIC
from kiln.arith.stmt import StmtSimplifier
from kiln.tir import builtin
from kiln.tir.expr import (
    Add,
    Call,
    Div,
    FloorDiv,
    IntImm,
    Let,
    Min,
    Mul,
    PrimExpr,
    Sub,
    Var,
    as_const_int,
    convert,
)
from kiln.tir.functor import substitute
from kiln.tir.stmt import Stmt

# The simplifier's pipeline: rule sets in the order their rules are tried for each node class.
RULES = rule_table(FOLD, ARITH, DIVMOD, LOGIC)
MAX_STEPS = 20_000
_IF_THEN_ELSE = builtin.op("if_then_else")


class Analyzer:
    """Bounds of variables plus the analyses that use them: bounds, simplification, proofs.

    ``var_bounds`` maps variables to inclusive ``(lo, hi)`` pairs or `ConstIntBound`s; `bind`,
    `update` and the scopes edit them. Besides the bounds the analyzer keeps only
    ``hit_step_limit``, set (and left set) once a call stops at `MAX_STEPS` rule applications.
    """

    def __init__(self, var_bounds: Mapping[Var, BoundLike] | None = None) -> None:
        self._bounds = BoundAnalyzer(normalize_var_bounds(var_bounds))
        self._symbolic_max: dict[Var, PrimExpr] = {}
        self._memo: dict[PrimExpr, PrimExpr] = {}
        self._linear: LinearMemo = {}
        self._steps = 0
        self.hit_step_limit = False

    # -- variable bounds ------------------------------------------------------------------------
    def bind(self, var: Var, rng: Any) -> None:
        """Bound ``var`` by a loop range: a `Range`, a ``(min, extent)`` pair, or a bound.

        ``min`` and ``extent`` may be expressions; their constant bounds are used, and a
        range that is not constant also gives ``var``'s symbolic maximum ``min + extent - 1``
        (`symbolic_max`). A `ConstIntBound` is taken as is.
        """
        self._bounds.set_var_bound(var, self._range_bound(rng))
        self._symbolic_max.pop(var, None)
        if not isinstance(rng, ConstIntBound):
            lo, ext = (rng.min, rng.extent) if hasattr(rng, "extent") else rng
            lo, ext = convert(lo), convert(ext)
            if not (isinstance(lo, IntImm) and isinstance(ext, IntImm)):
                top = ext if as_const_int(lo) == 0 else Add(lo, ext)
                self._symbolic_max[var] = Sub(top, IntImm(top.dtype, 1))

    def symbolic_max(self, var: Var) -> PrimExpr | None:
        """The largest value of ``var`` as an expression, when a range that is not constant
        bound it (``seq - 1`` for a loop over ``seq``)."""
        return self._symbolic_max.get(var)

    def update(self, var: Var, bound: BoundLike) -> None:
        """Set the bound of ``var`` to the inclusive ``(lo, hi)`` pair or `ConstIntBound`."""
        self._bounds.set_var_bound(var, as_bound(bound))
        self._symbolic_max.pop(var, None)

    def _range_bound(self, rng: Any) -> ConstIntBound:
        if isinstance(rng, ConstIntBound):
            return rng
        if hasattr(rng, "min") and hasattr(rng, "extent"):
            lo_e, ext_e = rng.min, rng.extent
        else:
            lo_e, ext_e = rng
        lo_e = convert(lo_e)
        lo = self.const_int_bound(lo_e)
        ext = self.const_int_bound(convert(ext_e, lo_e.dtype))
        last = bound_add(lo, ConstIntBound(ext.min_value - 1, ext.max_value - 1))
        hi = max(last.max_value, lo.min_value)  # an empty loop never runs: any bound will do
        return ConstIntBound(lo.min_value, hi)

    @contextmanager
    def bound_scope(self, var: Var, rng: Any) -> Iterator[None]:
        """`bind` ``var`` for the duration of a ``with`` block, then restore its old bound.

        A loop range ``(min, extent)`` also says the loop's body runs only when ``extent >= 1``,
        and what that implies holds inside the block: each variable of a product of non-negative
        factors is at least 1 (a fused ``b * 2 * s`` loop: ``s`` is a safe divisor there); both
        sides of a ``min`` are at least 1; ``x // c >= 1`` (``c > 0``) gives ``x >= c`` and
        ``x + k >= m`` gives ``x >= m - k``, ``a - b >= m`` gives ``a >= m + min(b)`` (the
        whole steps of a split loop over ``min((s + 7) // 8, s // 8)`` tiles: ``s >= 8``; its
        tail over ``(s + 7) // 8 - min(...)``: ``s >= 1``); the factors of a product are each
        at least 1 whatever their form (``b * ((s + 15) // 16)``: ``s >= 1``)."""
        implied = self._implied_minimums(rng)
        saved = {v: self._bounds.var_bounds.get(v) for v in (var, *implied)}
        saved_max = self._symbolic_max.get(var)
        self.bind(var, rng)
        for v, least in implied.items():
            if v is not var:
                b = self._bounds.var_bound(v)
                self._bounds.set_var_bound(v, ConstIntBound(max(least, b.min_value), b.max_value))
        try:
            yield
        finally:
            for v, old in saved.items():
                self._bounds.set_var_bound(v, old)
            self._symbolic_max.pop(var, None)
            if saved_max is not None:
                self._symbolic_max[var] = saved_max

    def _implied_minimums(self, rng: Any) -> dict[Var, int]:
        """The variables a loop extent ``>= 1`` bounds from below, with their least values."""
        if isinstance(rng, ConstIntBound):
            return {}
        extent = rng.extent if hasattr(rng, "extent") else rng[1]
        if not isinstance(extent, PrimExpr) or isinstance(extent, IntImm):
            return {}
        return self._at_least(extent, 1)

    def _at_least(self, e: PrimExpr, m: int) -> dict[Var, int]:
        """Variables ``v >= k`` that ``e >= m`` (``m >= 1``) implies."""
        if isinstance(e, Var):
            return {e: m}
        if isinstance(e, Min):
            out = self._at_least(e.a, m)
            for v, k in self._at_least(e.b, m).items():
                out[v] = max(k, out.get(v, k))
            return out
        c = as_const_int(getattr(e, "b", None))
        if isinstance(e, (FloorDiv, Div)) and c is not None and c > 0:
            return self._at_least(e.a, m * c)
        if isinstance(e, Add) and c is not None:
            return self._at_least(e.a, m - c) if m - c >= 1 else {}
        if isinstance(e, Sub):  # a - b >= m: a >= m + (the least b)
            least = self.const_int_bound(e.b).min_value
            return self._at_least(e.a, m + least) if m + least >= 1 else {}
        if isinstance(e, Mul):
            factors = mul_factors(e)
            if any(self.const_int_bound(f).min_value < 0 for f in factors):
                return {}
            out = {}  # integer factors >= 0 of a product >= 1: each is >= 1
            for f in factors:
                for v, k in self._at_least(f, 1).items():
                    out[v] = max(k, out.get(v, k))
            return out
        return {}

    @contextmanager
    def constraint_scope(self, cond: PrimExpr) -> Iterator[None]:
        """Assume ``cond`` inside a ``with`` block: tightens bounds of variables it compares.

        Understood: conjunctions of ``v < e``, ``v <= e``, ``v > e``, ``v >= e``, ``v == e``
        (either side) with ``v`` a variable; anything else is ignored (which is sound).
        """
        saved: dict[Var, ConstIntBound | None] = {}
        for var, b in self._constraint_bounds(cond).items():
            current = self._bounds.var_bound(var)
            tighter = current.intersect(b)
            if tighter is not None:
                saved.setdefault(var, self._bounds.var_bounds.get(var))
                self._bounds.set_var_bound(var, tighter)
        try:
            yield
        finally:
            for var, old in saved.items():
                self._bounds.set_var_bound(var, old)

    def _constraint_bounds(self, cond: PrimExpr) -> dict[Var, ConstIntBound]:
        return constraint_bounds(cond, self.const_int_bound)

    # -- analyses -------------------------------------------------------------------------------
    def const_int_bound(self, expr: PrimExpr) -> ConstIntBound:
        """The constant interval of ``expr`` (see `kiln.arith.bound`)."""
        return self._bounds.bound(convert(expr))

    def simplify(self, expr: Any) -> PrimExpr:
        """An equal, simpler expression (see the module docstring for the guarantees)."""
        expr = convert(expr)
        self._memo, self._linear, self._steps = {}, {}, 0
        try:
            return self._rewrite(expr)
        except RecursionError:
            # NOTE: the driver recurses once per nesting level; a tree deeper than Python's
            # recursion limit (a chain of ~500 additions) is returned as is, which is correct.
            return expr
        finally:
            self._memo, self._linear = {}, {}

    def linear(self, e: PrimExpr) -> Linear:
        """The linear form of ``e``, memoized until the current `simplify` call ends (rules
        share it: never modify it)."""
        return to_linear(e, self._linear)

    def can_prove(self, cond: Any) -> bool:
        """True only if ``cond`` holds for every assignment within the bounds."""
        return as_const_int(self.simplify(cond)) == 1

    def can_prove_equal(self, a: Any, b: Any) -> bool:
        """True only if ``a == b`` for every assignment within the bounds."""
        a = convert(a)
        return self.can_prove(a.eq(convert(b, a.dtype)))

    def simplify_stmt(self, stmt: Any) -> Any:
        """Every expression of ``stmt`` simplified (see `kiln.arith.stmt`)."""
        return StmtSimplifier(self).visit(stmt)

    # -- the rewrite driver ---------------------------------------------------------------------
    def _rewrite(self, e: PrimExpr) -> PrimExpr:
        done = self._memo.get(e)
        if done is not None:
            return done
        taken = self._decided_branch(e)
        if taken is not None:
            out = self._rewrite(taken)
        else:
            out = self._apply_rules(self._rewrite_children(e))
        self._memo[e] = out
        self._memo[out] = out
        return out

    def _decided_branch(self, e: PrimExpr) -> PrimExpr | None:
        """The branch an ``if_then_else`` takes when its (scalar) condition simplifies to a
        constant, else None.

        NOTE: the result is what simplifying every child and then applying
        `if_then_else_decided` gives (the simplified branch taken), without simplifying the
        branch not taken. A concat of n inputs is a chain of n nested ``if_then_else``, and
        `LoopPartition` splits its loop into n pieces, in each of which the chain is decided:
        bottom-up, every piece simplified every branch's index (DenseNet-121's 25-input concat:
        3.5 s CPU of `Simplify` for one kernel; ~0.3 s decided first)."""
        if type(e) is not Call or e.op is not _IF_THEN_ELSE or e.args[0].dtype.lanes != 1:
            return None
        taken = as_const_int(self._rewrite(e.args[0]))
        if taken is None:
            return None
        self._steps += 1  # the rule application this stands for
        return e.args[1] if taken else e.args[2]

    def _apply_rules(self, e: PrimExpr) -> PrimExpr:
        for rule in RULES.get(type(e), ()):
            new = rule(e, self)
            if (
                new is None
                or new is e
                or introduces_overflow(new, e, self._memo, self._bounds, self.linear)
            ):
                continue
            self._steps += 1
            if self._steps > MAX_STEPS:
                self.hit_step_limit = True
                return new
            return self._rewrite(new)
        return e

    def _rewrite_children(self, e: PrimExpr) -> PrimExpr:
        if isinstance(e, Let):
            return self._rewrite_let(e)
        changes: dict[str, Any] = {}
        for name in type(e).field_names():
            old = getattr(e, name)
            if isinstance(old, PrimExpr):
                new: Any = self._rewrite(old)
            elif isinstance(old, tuple) and old:
                items = tuple(self._rewrite(x) if isinstance(x, PrimExpr) else x for x in old)
                new = old if all(a is b for a, b in zip(items, old)) else items
            else:
                continue
            if new is not old:
                changes[name] = new
        return replace(e, **changes) if changes else e  # type: ignore[type-var]

    def _rewrite_let(self, e: Let) -> PrimExpr:
        value = self._rewrite(e.value)
        if isinstance(value, (IntImm, Var)):
            # NOTE: substituted before the body is simplified, so the body's nodes count as the
            # input's (each equals the node it came from), not as new nodes the guard checks.
            return self._rewrite(substitute(e.body, {e.var: value}))
        old = self._bounds.var_bounds.get(e.var)
        if value.dtype.is_integer or value.dtype.is_bool:
            self._bounds.set_var_bound(e.var, self._bounds.bound(value))
        try:
            body = self._rewrite(e.body)
        finally:
            self._bounds.set_var_bound(e.var, old)
        if value is e.value and body is e.body:
            return e
        return Let(e.var, value, body)


def simplify(expr: Any, var_bounds: Mapping[Var, BoundLike] | None = None) -> PrimExpr:
    """``expr`` simplified under inclusive ``{var: (lo, hi)}`` bounds."""
    return Analyzer(var_bounds).simplify(expr)


def simplify_stmt(stmt: Any, var_bounds: Any = None) -> Any:
    """``stmt`` with every expression simplified (`StmtSimplifier`, see `kiln.arith.stmt`).

    ``stmt`` may also be a function with a statement ``body`` (a `PrimFunc`): its body is
    simplified and the function rebuilt. ``var_bounds`` are inclusive ``{var: (lo, hi)}``.
    """
    an = Analyzer(var_bounds)
    if isinstance(stmt, Stmt):
        return an.simplify_stmt(stmt)
    body = getattr(stmt, "body", None)
    if not isinstance(body, Stmt):
        raise TypeError(f"simplify_stmt expects a Stmt or a PrimFunc, got {type(stmt).__name__}")
    new = an.simplify_stmt(body)
    return stmt if new is body else replace(stmt, body=new)
