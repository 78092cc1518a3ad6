"""LoopPartition: a loop annotated ``pragma_loop_partition`` is split where the conditions of
its body change value, so that most iterations run a copy of the body without them.

`SPLIT` (1): a serial loop becomes consecutive loops over the ranges in which its conditions
keep one value. A padding copy ``pad[y, x] = if_then_else(x >= 1 and x < 65, data[y, x - 1],
0)`` over ``x in [0, 68)`` becomes loops over ``[0, 1)``, ``[1, 65)`` and ``[65, 68)``;
`Simplify` (which runs next) decides each copy's condition under its loop's range, so the
middle loop is a plain copy the C compiler vectorizes and the others store zeros. A loop of
another kind (parallel) keeps its iterations together: its body is unswitched instead,
``if lo <= v < hi: body else: body``, with ``[lo, hi)`` its interior.

`GUARD` (2): nested annotated loops (a kernel's tile loops) unswitch once, at the innermost:
``if v1 in I1 and v2 in I2 ...: body else: body``, each ``Ik`` the interior of a loop. A padded
convolution that reads its input in place then has two copies of its tile: the plain one for
the tiles inside the input and the guarded one for those at the border.

A loop's interior is its widest piece in which every condition is decided. Cut points come
from the comparisons anywhere in the body that are linear in the loop variable ``v``, the rest
being a constant plus variables of loops inside the body (``a*v + r < c``, ``r`` bounded by
those loops' ranges, and its kin; ``==``/``!=`` only without such variables): where each
becomes true, or false, for every value of ``r``. A tile loop ``xo`` reading
``x = xo*8 + xi + rx - 1`` is cut where every pixel and tap of a tile lies inside the row.
Conditions mentioning other variables give none.

Symbolic tails (any serial loop, annotated or not): a loop ``v`` from 0 over a symbolic extent
whose body holds guards ``k*v + r < x`` (``r`` over loops inside the body, ``x`` free of both:
the tail guard of a split by a constant over a symbolic extent, ``ko*32 + l < s``) becomes a main
loop over the values of ``v`` for which every such guard holds for every ``r``, without those
guards, then the rest of the loop with them: whole vectors run unguarded and GCC vectorizes
them; only the last, partial one is guarded.

Precondition: annotated loops have a constant ``min`` and ``extent`` (others are left whole).
Postcondition: no loop carries the annotation; each piece keeps the loop's kind and other
annotations, and every copy of a body but the first has fresh copies of the variables it
defines (no variable is defined twice). Values computed are unchanged: the pieces run the
iterations of the original loop in the original order, and a copy runs where its condition
holds.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import ClassVar

from kiln.arith.linear import Atom, Linear, from_linear, to_linear
from kiln.arith.rules_logic import FLIP, decide_compare
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.node import as_attrs
from kiln.ir.transform import PassContext
from kiln.ir.visitor import MemoMutator, Mutator, pre_order_nodes
from kiln.tir import builtin
from kiln.tir.analysis.rebind import defined_vars, renew_defs
from kiln.tir.expr import (
    BOOL,
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    And,
    Call,
    FloorDiv,
    IntImm,
    Max,
    Min,
    Not,
    Or,
    PrimExpr,
    Var,
    as_const_int,
)
from kiln.tir.function import PrimFunc, PrimFuncPass
from kiln.tir.stmt import For, ForKind, IfThenElse, LetStmt, Stmt, seq

PARTITION = "pragma_loop_partition"
"""The loop annotation asking for the split (`kiln.te.Stage.pragma` ``"loop_partition"``):
`SPLIT` or `GUARD`."""

SPLIT = 1
"""Split a serial loop into pieces (unswitch any other kind on its interior)."""

GUARD = 2
"""Unswitch once for all the nested `GUARD` loops: the innermost one's body becomes
``if v1 in I1 and v2 in I2 ...: body else: body`` with ``Ik`` each loop's interior (the widest
range in which its conditions are decided), so a tiled kernel has two copies of its tile, not
one per piece of each loop."""


@dataclass(frozen=True)
class LoopPartition(PrimFuncPass):
    """Split annotated loops where their conditions change (see the module docstring)."""

    name: ClassVar[str] = "loop-partition"

    def transform(self, gv: GlobalVar, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        body = _Partition().visit(func.body)
        return func if body is func.body else replace(func, body=body)


class _Partition(Mutator):
    def __init__(self) -> None:
        super().__init__()
        self.guards: list[PrimExpr | None] = []
        """Interior conditions of the enclosing `GUARD` loops (None: the loop has none)."""
        self.placed = 0
        self.blocked = 0

    def visit_For(self, s: For) -> Stmt:
        mode = s.annotations.get(PARTITION)
        if mode == GUARD:
            return self._guard(s)
        s = self.generic_visit(s)
        if not mode:
            return _split_tail(s) or s
        s, rng = _strip(s)
        if rng is None:
            return s
        cmps = _comparisons(s.loop_var, s.body)
        bounds = [rng[0], *_cut_points(cmps, *rng), rng[1]]
        if s.kind != ForKind.SERIAL:
            inside = _interior(s.loop_var, cmps, bounds)
            return s if inside is None or as_const_int(inside) else _unswitch(s, inside)
        if len(bounds) == 2:
            return s
        pieces = []
        # NOTE: every piece defines the variables of ``s``: found once, not once per piece
        # (DenseNet-121's concat loops have up to 25 pieces; see the commit for the numbers).
        defined = defined_vars(s)
        inner = _inner_bounds(s.body)
        for k, (a, b) in enumerate(zip(bounds, bounds[1:])):
            body = _Decide(s.loop_var, a, b - 1, inner).visit(s.body)
            piece = replace(s, min=a, extent=b - a, body=body)
            pieces.append(piece if k == 0 else renew_defs(piece, defined))
        return seq(*pieces)

    def _guard(self, s: For) -> Stmt:
        s, rng = _strip(s)
        inside: PrimExpr | None = None
        if rng is not None:
            cmps = _comparisons(s.loop_var, s.body)
            bounds = [rng[0], *_cut_points(cmps, *rng), rng[1]]
            inside = _interior(s.loop_var, cmps, bounds)
        self.guards.append(inside)
        placed, blocked = self.placed, self.blocked
        body = self.visit(s.body)
        guards = self.guards.copy()
        self.guards.pop()
        s = s if body is s.body else replace(s, body=body)
        if self.placed > placed or self.blocked > blocked:
            return s  # placed inside, or an inner loop has no interior
        if any(g is None for g in guards):
            self.blocked += 1  # a loop without interior: no tile is plain
            return s
        conds = [g for g in guards if as_const_int(g) is None]
        if not conds:
            return s
        self.placed += 1
        return _unswitch(s, functools.reduce(And, conds))


def _strip(s: For) -> tuple[For, tuple[int, int] | None]:
    """``s`` without the annotation, and its constant range (None if symbolic)."""
    rest = {k: v for k, v in s.annotations.items() if k != PARTITION}
    s = replace(s, annotations=as_attrs(rest))
    lo, extent = as_const_int(s.min), as_const_int(s.extent)
    return s, None if lo is None or extent is None else (lo, lo + extent)


def _unswitch(s: For, inside: PrimExpr) -> For:
    """``s`` with its body run as a second copy where ``inside`` holds."""
    return replace(s, body=IfThenElse(inside, renew_defs(s.body), s.body))


Comparison = tuple[type, int, int, int]
"""``k*v + r  op  0`` with ``k > 0`` and ``r`` in ``[lo, hi]``: ``(op, k, lo, hi)``."""


def _comparisons(v: Var, body: Stmt) -> list[Comparison]:
    """The comparisons of ``body`` linear in ``v`` whose rest is a constant plus variables of
    loops inside ``body`` (``==``/``!=``: a constant only)."""
    inner = _inner_bounds(body)
    out: list[Comparison] = []
    key = Atom(v)
    for n in pre_order_nodes(body):
        op = type(n)
        if op not in FLIP or not n.a.dtype.is_int or n.a.dtype.lanes != 1:
            continue
        lin = to_linear(n.a).plus(to_linear(n.b), -1)
        k = lin.terms.pop(key, None)
        rest = _rest_bound(lin, inner)
        if k is None or rest is None or (op in (EQ, NE) and rest[0] != rest[1]):
            continue
        if k < 0:
            op, k, rest = FLIP[op], -k, (-rest[1], -rest[0])
        out.append((op, k, *rest))
    return out


def cut_points(v: Var, body: Stmt, lo: int, hi: int) -> list[int]:
    """The sorted values in ``(lo, hi)`` at which a comparison of ``body`` that is linear in
    ``v`` (the rest: a constant and variables of loops inside ``body``) may change value for
    some value of the rest: between two of them (or the ends), each such comparison is either
    constant or depends on the inner loops only as it does everywhere in that piece."""
    return _cut_points(_comparisons(v, body), lo, hi)


def _cut_points(cmps: list[Comparison], lo: int, hi: int) -> list[int]:
    cuts: set[int] = set()
    for op, k, rlo, rhi in cmps:
        for c in {rlo, rhi}:  # k*v + c  op  0 at the extremes of the rest
            cuts.update(_cuts(op, k, c))
    return sorted(p for p in cuts if lo < p < hi)


def _interior(v: Var, cmps: list[Comparison], bounds: list[int]) -> PrimExpr | None:
    """``lo <= v < hi`` for the widest piece in which every comparison is decided (True: the
    whole loop); None if no piece decides them all."""
    pieces = [(a, b) for a, b in zip(bounds, bounds[1:]) if _decided(cmps, a, b - 1)]
    if not pieces:
        return None
    a, b = max(pieces, key=lambda p: p[1] - p[0])
    if (a, b) == (bounds[0], bounds[-1]):
        return IntImm(BOOL, 1)  # the whole loop
    return And(v >= IntImm(v.dtype, a), v < IntImm(v.dtype, b))


def _decided(cmps: list[Comparison], first: int, last: int) -> bool:
    """Whether each comparison has one value for ``v`` in ``[first, last]``, any rest."""
    return all(
        decide_compare(op, k * first + rlo, k * last + rhi) is not None for op, k, rlo, rhi in cmps
    )


def _inner_bounds(body: Stmt) -> dict[Var, tuple[int, int]]:
    """The inclusive ranges of the variables of constant-range loops inside ``body``."""
    out = {}
    for n in pre_order_nodes(body):
        if isinstance(n, For):
            lo, extent = as_const_int(n.min), as_const_int(n.extent)
            if lo is not None and extent:
                out[n.loop_var] = (lo, lo + extent - 1)
    return out


def _rest_bound(lin: Linear, inner: dict[Var, tuple[int, int]]) -> tuple[int, int] | None:
    """The constant bounds of ``lin`` when every term is an inner loop variable."""
    low = high = lin.const
    for atom, coef in lin.items():
        if atom not in inner:
            return None
        a, b = coef * inner[atom][0], coef * inner[atom][1]
        low, high = low + min(a, b), high + max(a, b)
    return low, high


def _cuts(op: type, k: int, c: int) -> list[int]:
    """First values of ``v`` at which ``k*v + c op 0`` (``k > 0``) may differ from the value
    just before."""
    if op in (LT, GE):  # true below / from ceil(-c / k)
        return [-(c // k)]
    if op in (LE, GT):  # true up to / above floor(-c / k)
        return [(-c) // k + 1]
    if c % k:  # EQ / NE: no integer solution
        return []
    return [-c // k, -c // k + 1]


def _split_tail(s: For) -> Stmt | None:
    """``s`` as a main loop without its tail guards and the guarded rest (module docstring),
    or None when ``s`` is not a serial loop from 0 over a symbolic extent with such guards."""
    if s.kind != ForKind.SERIAL or as_const_int(s.extent) is not None:
        return None
    if as_const_int(s.min) != 0 or not s.loop_var.dtype.is_int:
        return None
    inner = _inner_bounds(s.body)
    defined = {n.loop_var for n in pre_order_nodes(s.body) if isinstance(n, For)}
    defined |= {n.var for n in pre_order_nodes(s.body) if isinstance(n, LetStmt)}
    guards, limits = [], []
    for n in pre_order_nodes(s.body):
        if isinstance(n, IfThenElse) and n.else_case is None:
            limit = _tail_limit(s.loop_var, n.condition, inner, defined)
            if limit is not None:
                guards.append(n)
                limits.append(limit)
    if not guards:
        return None
    main = functools.reduce(Min, limits, s.extent)
    main = Max(IntImm(s.extent.dtype, 0), main)
    body = _Unguard({id(g) for g in guards}).visit(s.body)
    head = replace(s, extent=main, body=body)
    rest = renew_defs(replace(s, min=main, extent=s.extent - main))
    return seq(head, rest)


def _tail_limit(
    v: Var, cond: PrimExpr, inner: dict[Var, tuple[int, int]], defined: set[Var]
) -> PrimExpr | None:
    """For ``k*v + r + f < 0`` (or ``<= 0``; ``r`` over the inner loops, ``f`` free of the
    loop's variables, ``k > 0``): the first ``v`` at which it may fail for some ``r``."""
    if not isinstance(cond, (LT, LE)) or not cond.a.dtype.is_int or cond.a.dtype.lanes != 1:
        return None
    lin = to_linear(cond.a).plus(to_linear(cond.b), -1)
    k = lin.terms.pop(Atom(v), None)
    if k is None or k <= 0:
        return None
    free = Linear({a: c for a, c in lin.terms.items() if a.expr not in inner}, 0)
    rest = _rest_bound(Linear({a: c for a, c in lin.terms.items() if a.expr in inner}, lin.const),
                       inner)  # fmt: skip
    uses = {n for a in free.terms for n in pre_order_nodes(a.expr) if isinstance(n, Var)}
    if rest is None or not free.terms or uses & (defined | {v}):
        return None
    # NOTE: k*v + hi + f < 0  <=>  v < ceil(-(hi + f) / k); with <=, v < floor(-(hi + f) / k) + 1
    bound = from_linear(free.scaled(-1).plus(Linear({}, -rest[1])), v.dtype)
    if bound is None:
        return None
    kk = IntImm(v.dtype, k)
    if isinstance(cond, LT):
        return FloorDiv(bound + IntImm(v.dtype, k - 1), kk)
    return FloorDiv(bound, kk) + IntImm(v.dtype, 1)


IF_THEN_ELSE = builtin.op("if_then_else")


class _Decide(MemoMutator):
    """The body of one piece of a split loop (``v`` in ``[first, last]``) with each comparison
    that is decided there (linear in ``v``, the rest over the loops inside) made a constant,
    and the ``if_then_else``, ``and``, ``or`` and ``not`` it decides folded. NOTE: `Simplify`
    decides them too, but a piece then reached it with the whole chain: a concat of k inputs
    is k nested ``if_then_else`` and splits into k pieces, each of which carried (and renewed,
    and simplified) all k reads (DenseNet-121: k up to 32, 58 such kernels)."""

    def __init__(self, v: Var, first: int, last: int, inner: dict[Var, tuple[int, int]]) -> None:
        super().__init__()
        self.key, self.first, self.last, self.inner = Atom(v), first, last, inner

    def _compare(self, n: PrimExpr) -> PrimExpr:
        n = self.generic_visit(n)
        op = type(n)
        if not n.a.dtype.is_int or n.a.dtype.lanes != 1:
            return n
        lin = to_linear(n.a).plus(to_linear(n.b), -1)
        k = lin.terms.pop(self.key, None)
        rest = _rest_bound(lin, self.inner)
        if k is None or rest is None:
            return n
        if k < 0:
            op, k, rest = FLIP[op], -k, (-rest[1], -rest[0])
        value = decide_compare(op, k * self.first + rest[0], k * self.last + rest[1])
        return n if value is None else IntImm(n.dtype, int(value))

    visit_LT = visit_LE = visit_GT = visit_GE = visit_EQ = visit_NE = _compare

    def visit_Call(self, n: Call) -> PrimExpr:
        if n.op is IF_THEN_ELSE and n.args[0].dtype.lanes == 1:
            taken = as_const_int(self.visit(n.args[0]))
            if taken is not None:
                return self.visit(n.args[1] if taken else n.args[2])
        return self.generic_visit(n)

    def _connective(self, n: And | Or) -> PrimExpr:
        """``and`` / ``or`` with a decided operand: the absorbing value, or the other one."""
        n = self.generic_visit(n)
        absorbing = 0 if isinstance(n, And) else 1
        a, b = as_const_int(n.a), as_const_int(n.b)
        if absorbing in (a, b):
            return IntImm(n.dtype, absorbing) if n.dtype.lanes == 1 else n
        return n.b if a == 1 - absorbing else n.a if b == 1 - absorbing else n

    visit_And = visit_Or = _connective

    def visit_Not(self, n: Not) -> PrimExpr:
        n = self.generic_visit(n)
        a = as_const_int(n.a)
        return n if a is None else IntImm(n.dtype, 1 - a)

    def visit_IfThenElse(self, s: IfThenElse) -> Stmt:
        taken = as_const_int(self.visit(s.condition))
        if taken == 1:
            return self.visit(s.then_case)
        if taken == 0 and s.else_case is not None:
            return self.visit(s.else_case)
        return self.generic_visit(s)


class _Unguard(Mutator):
    """The statements with the guards named (by id) replaced by their bodies."""

    def __init__(self, guards: set[int]) -> None:
        super().__init__()
        self.guards = guards

    def visit_IfThenElse(self, s: IfThenElse) -> Stmt:
        if id(s) in self.guards:
            return self.visit(s.then_case)
        return self.generic_visit(s)
