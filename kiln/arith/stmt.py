"""Simplify every expression of a statement, using what the enclosing statements establish.

Inside ``for v in [min, min + extent)`` the body sees ``v``'s range; ``let v = e`` gives ``v`` the
bound of ``e``; a ``thread_extent`` / ``virtual_thread`` attribute bounds its thread variable by
``[0, extent)``; ``if c`` assumes ``c`` in the then-branch and ``not c`` in the else-branch, and
an ``assert c`` assumes ``c`` in its body. An ``IfThenElse`` whose condition simplifies to a
constant is replaced by the branch taken (a branch-less no-op ``Evaluate(0)`` when there is
none); such no-ops are dropped from sequences.

Declarations are left alone: definition sites (`For.loop_var`, `LetStmt.var`, declared buffers)
and `Buffer`/`IterVar` objects are never rebuilt, so binder identity is preserved. Statements
with nothing to simplify come back as the same object.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from kiln.ir.visitor import Mutator
from kiln.tir.expr import IntImm, Not, PrimExpr, as_const_int
from kiln.tir.stmt import (
    AssertStmt,
    AttrStmt,
    Evaluate,
    For,
    IfThenElse,
    IterVar,
    LetStmt,
    SeqStmt,
    Stmt,
    seq,
)

if TYPE_CHECKING:
    from kiln.arith.simplify import Analyzer

_THREAD_ATTRS = ("thread_extent", "virtual_thread")


def _is_noop(s: Stmt) -> bool:
    return isinstance(s, Evaluate) and isinstance(s.value, IntImm)


def _noop() -> Stmt:
    return seq()


class StmtSimplifier(Mutator):
    """A `Mutator` simplifying each expression with an `Analyzer` (see the module docstring)."""

    def __init__(self, analyzer: Analyzer) -> None:
        super().__init__()
        self.an = analyzer

    def visit(self, n: Any) -> Any:
        if isinstance(n, PrimExpr):
            return self.an.simplify(n)
        if isinstance(n, Stmt):
            return super().visit(n)
        return n  # buffers, iteration variables, ranges: declarations stay as they are

    def generic_visit(self, n: Any) -> Any:
        changes: dict[str, Any] = {}
        for name in n.field_names():
            if name == "span" or name in n._def_fields:
                continue
            old = getattr(n, name)
            new = self._mutate_value(old)
            if new is not old:
                changes[name] = new
        return replace(n, **changes) if changes else n

    def _rebuild(self, s: Stmt, **fields: Any) -> Stmt:
        changed = {k: v for k, v in fields.items() if v is not getattr(s, k)}
        return replace(s, **changed) if changed else s  # type: ignore[type-var]

    def visit_For(self, s: For) -> Stmt:
        lo, extent = self.visit(s.min), self.visit(s.extent)
        with self.an.bound_scope(s.loop_var, (lo, extent)):
            body = self.visit(s.body)
        return self._rebuild(s, min=lo, extent=extent, body=body)

    def visit_LetStmt(self, s: LetStmt) -> Stmt:
        value = self.visit(s.value)
        with ExitStack() as stack:
            if value.dtype.is_integer and value.dtype.lanes == 1:
                bound = self.an.const_int_bound(value)
                stack.enter_context(self.an.bound_scope(s.var, bound))
            body = self.visit(s.body)
        return self._rebuild(s, value=value, body=body)

    def visit_AttrStmt(self, s: AttrStmt) -> Stmt:
        value = self.visit(s.value)
        with ExitStack() as stack:
            if s.attr_key in _THREAD_ATTRS and isinstance(s.node, IterVar):
                zero = IntImm(value.dtype, 0)
                stack.enter_context(self.an.bound_scope(s.node.var, (zero, value)))
            body = self.visit(s.body)
        return self._rebuild(s, value=value, body=body)

    def visit_IfThenElse(self, s: IfThenElse) -> Stmt:
        cond = self.visit(s.condition)
        decided = as_const_int(cond)
        if decided is not None:
            taken = s.then_case if decided else s.else_case
            return _noop() if taken is None else self.visit(taken)
        with self.an.constraint_scope(cond):
            then_case = self.visit(s.then_case)
        else_case = s.else_case
        if else_case is not None:
            with self.an.constraint_scope(self.an.simplify(Not(cond))):
                else_case = self.visit(else_case)
        return self._rebuild(s, condition=cond, then_case=then_case, else_case=else_case)

    def visit_AssertStmt(self, s: AssertStmt) -> Stmt:
        cond, message = self.visit(s.condition), self.visit(s.message)
        with self.an.constraint_scope(cond):
            body = self.visit(s.body)
        return self._rebuild(s, condition=cond, message=message, body=body)

    def visit_SeqStmt(self, s: SeqStmt) -> Stmt:
        items = tuple(self.visit(x) for x in s.seq)
        if all(a is b for a, b in zip(items, s.seq)):
            return s
        return seq(*(x for x in items if not _is_noop(x)))
