"""LoopPartition: a loop annotated ``pragma_loop_partition`` is split into consecutive loops
over the ranges in which the conditions of its body keep one value.

A padding copy ``pad[y, x] = if_then_else(x >= 1 and x < 65, data[y, x - 1], 0)`` over
``x in [0, 68)`` becomes three loops, over ``[0, 1)``, ``[1, 65)`` and ``[65, 68)``; `Simplify`
(which runs next) decides each copy's condition under its loop's range, so the middle loop is
a plain copy the C compiler vectorizes and the others store zeros.

Cut points come from the comparisons anywhere in the body that are linear in the loop variable
with everything else constant (``a*v + b < c`` and its kin; ``==``/``!=`` when ``a`` divides
evenly). Conditions mentioning other variables give none.

Precondition: annotated loops have constant ``min`` and ``extent`` and are serial (an annotated
loop of another kind, or with a symbolic range, is left whole).
Postcondition: no loop carries the annotation; each piece keeps the loop's kind and other
annotations, and every piece but the first has fresh copies of the variables its body
defines (no variable is defined twice). Values computed are unchanged: the pieces run the
iterations of the original loop in the original order.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from kiln.arith.linear import Atom, to_linear
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.node import as_attrs
from kiln.ir.transform import PassContext
from kiln.ir.visitor import Mutator, pre_order_nodes
from kiln.tir.analysis.rebind import renew_defs
from kiln.tir.expr import EQ, GE, GT, LE, LT, NE, Var, as_const_int
from kiln.tir.function import PrimFunc, PrimFuncPass
from kiln.tir.stmt import For, ForKind, Stmt, seq

PARTITION = "pragma_loop_partition"
"""The loop annotation asking for the split (`kiln.te.Stage.pragma` ``"loop_partition"``)."""

_FLIP = {LT: GT, LE: GE, GT: LT, GE: LE, EQ: EQ, NE: NE}


@dataclass(frozen=True)
class LoopPartition(PrimFuncPass):
    """Split annotated loops where their conditions change (see the module docstring)."""

    name: ClassVar[str] = "loop-partition"

    def transform(self, gv: GlobalVar, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        body = _Partition().visit(func.body)
        return func if body is func.body else replace(func, body=body)


class _Partition(Mutator):
    def visit_For(self, s: For) -> Stmt:
        s = self.generic_visit(s)
        if not s.annotations.get(PARTITION):
            return s
        rest = as_attrs({k: v for k, v in s.annotations.items() if k != PARTITION})
        lo, extent = as_const_int(s.min), as_const_int(s.extent)
        if lo is None or extent is None or s.kind != ForKind.SERIAL:
            return replace(s, annotations=rest)
        bounds = [lo, *cut_points(s.loop_var, s.body, lo, lo + extent), lo + extent]
        pieces = []
        for k, (a, b) in enumerate(zip(bounds, bounds[1:])):
            piece = replace(s, min=a, extent=b - a, annotations=rest)
            pieces.append(piece if k == 0 else renew_defs(piece))
        return pieces[0] if len(pieces) == 1 else seq(*pieces)


def cut_points(v: Var, body: Stmt, lo: int, hi: int) -> list[int]:
    """The sorted values in ``(lo, hi)`` at which a comparison of ``body`` that is linear in
    ``v`` (and constant otherwise) may change value: each piece between two of them (or the
    ends) sees every such comparison constant."""
    cuts: set[int] = set()
    key = Atom(v)
    for n in pre_order_nodes(body):
        op = type(n)
        if op not in _FLIP or not n.a.dtype.is_int or n.a.dtype.lanes != 1:
            continue
        lin = to_linear(n.a).plus(to_linear(n.b), -1)
        k = lin.terms.get(key)
        if k is None or len(lin.terms) != 1:
            continue
        if k < 0:
            op, k, c = _FLIP[op], -k, -lin.const
        else:
            c = lin.const
        cuts.update(_cuts(op, k, c))  # k*v + c  op  0
    return sorted(p for p in cuts if lo < p < hi)


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
