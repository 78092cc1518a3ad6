"""ThreadSync: insert block barriers (``tvm_storage_sync``) around shared-memory accesses.

Precondition: a well-formed module (before or after `FlattenBuffer`); kernel regions are
outermost thread scopes (see `annotate_device_regions`).
Postcondition, inside every kernel region, for buffers in the pass's scope (``"shared"`` covers
``shared`` and ``shared.dyn``), conservatively (a barrier too many is slow, one too few is a race):

- in each statement sequence, an ``Evaluate(tvm_storage_sync(scope))`` precedes a statement that
  reads a buffer some earlier statement of the sequence wrote after the last barrier (RAW: one
  thread's write is seen by the others), and one that writes a buffer an earlier statement read
  after the last barrier (WAR: no thread overwrites what another has yet to read);
- a serial, unrolled or other sequential loop whose body both reads and writes such buffers gets
  a barrier at the top of its body (WAR: the next iteration's writes wait for this iteration's
  reads), placed inside the body's allocations;
- no barrier is placed inside a branch (or a loop) whose condition (or extent) depends on a
  thread index: not every thread would reach it. Its hazards are handled in the enclosing
  sequence, where the whole branch counts as one statement.

Statements outside kernel regions are unchanged; running the pass twice adds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.op import Op
from kiln.ir.transform import PassContext
from kiln.ir.visitor import Mutator, Visitor, pre_order_nodes
from kiln.tir.analysis.device import is_sync, thread_tag
from kiln.tir.expr import BufferLoad, Call, StringImm, Var
from kiln.tir.function import PrimFunc, PrimFuncPass
from kiln.tir.stmt import (
    Allocate,
    AttrStmt,
    BufferStore,
    DeclBuffer,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
    seq,
)
from kiln.tir.type import PointerType


@dataclass(frozen=True)
class ThreadSync(PrimFuncPass):
    """Insert ``tvm_storage_sync(scope)`` barriers in kernel regions (see module docstring)."""

    scope: str = "shared"
    name: ClassVar[str] = "thread-sync"

    def transform(self, gv: GlobalVar, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        return func.with_body(_Insert(self.scope).visit(func.body))


def storage_sync(scope: str) -> Evaluate:
    """The barrier statement ``T.tvm_storage_sync(scope)``."""
    return Evaluate(Call("int32", Op.get("tir.tvm_storage_sync"), (StringImm(scope),)))


def _in_scope(scope: str, storage: str) -> bool:
    return storage == scope or storage.startswith(scope + ".")


class _Accesses(Visitor):
    """The data variables of in-scope buffers a statement reads and writes."""

    def __init__(self, scope: str) -> None:
        super().__init__()
        self.scope = scope
        self.reads: set[Var] = set()
        self.writes: set[Var] = set()

    def visit_BufferLoad(self, e: BufferLoad) -> None:
        if _in_scope(self.scope, e.buffer.scope):
            self.reads.add(e.buffer.data)
        self.generic_visit(e)

    def visit_BufferStore(self, s: BufferStore) -> None:
        if _in_scope(self.scope, s.buffer.scope):
            self.writes.add(s.buffer.data)
        self.generic_visit(s)

    def visit_Call(self, e: Call) -> None:
        # NOTE: a pointer passed to a call (tvm_access_ptr, an extern) may be read and written.
        for a in e.args:
            ty = getattr(a, "type_annotation", None)
            if (
                isinstance(a, Var)
                and isinstance(ty, PointerType)
                and _in_scope(self.scope, ty.scope)
            ):
                self.reads.add(a)
                self.writes.add(a)
        self.generic_visit(e)


def _accesses(scope: str, s: Stmt) -> _Accesses:
    acc = _Accesses(scope)
    acc.visit(s)
    return acc


class _Insert(Mutator):
    def __init__(self, scope: str) -> None:
        super().__init__()
        self.scope = scope
        self.threads: set[Var] = set()
        self.divergent = False

    @property
    def active(self) -> bool:
        return bool(self.threads) and not self.divergent

    def _depends_on_thread(self, *exprs: Any) -> bool:
        return any(isinstance(n, Var) and n in self.threads for n in pre_order_nodes(exprs))

    def _visit_scoped(self, body: Stmt, var: Var | None, divergent: bool) -> Stmt:
        saved = (set(self.threads), self.divergent)
        if var is not None:
            self.threads.add(var)
        self.divergent = self.divergent or divergent
        try:
            return self.visit(body)
        finally:
            self.threads, self.divergent = saved

    def visit_AttrStmt(self, s: AttrStmt) -> Stmt:
        if thread_tag(s) is None:
            return self.generic_visit(s)
        var = getattr(s.node, "var", None)
        body = self._visit_scoped(s.body, var, False)
        return s if body is s.body else replace(s, body=body)

    def visit_For(self, s: For) -> Stmt:
        if thread_tag(s) is not None:
            body = self._visit_scoped(s.body, s.loop_var, False)
            return s if body is s.body else replace(s, body=body)
        divergent = self.active and self._depends_on_thread(s.min, s.extent)
        body = self._visit_scoped(s.body, None, divergent)
        if self.active and not divergent:
            acc = _accesses(self.scope, body)
            if acc.reads and acc.writes:
                body = self._prepend(body)
        return s if body is s.body else replace(s, body=body)

    def visit_IfThenElse(self, s: IfThenElse) -> Stmt:
        divergent = self.active and self._depends_on_thread(s.condition)
        then = self._visit_scoped(s.then_case, None, divergent)
        other = s.else_case
        if other is not None:
            other = self._visit_scoped(other, None, divergent)
        if then is s.then_case and other is s.else_case:
            return s
        return replace(s, then_case=then, else_case=other)

    def visit_SeqStmt(self, s: SeqStmt) -> Stmt:
        items = [self.visit(x) for x in s.seq]
        if not self.active:
            same = all(a is b for a, b in zip(items, s.seq))
            return s if same else seq(*items)
        out: list[Stmt] = []
        written: set[Var] = set()
        read: set[Var] = set()
        for st in items:
            if is_sync(st, self.scope):
                written.clear()
                read.clear()
            acc = _accesses(self.scope, st)
            if (acc.reads & written) or (acc.writes & read):
                out.append(storage_sync(self.scope))
                written.clear()
                read.clear()
            out.append(st)
            written |= acc.writes
            read |= acc.reads
        if len(out) == len(s.seq) and all(a is b for a, b in zip(out, s.seq)):
            return s
        return seq(*out)

    def _prepend(self, body: Stmt) -> Stmt:
        """``body`` with a barrier first, inside its allocations and lets."""
        if isinstance(body, (Allocate, DeclBuffer, LetStmt)):
            inner = self._prepend(body.body)
            return body if inner is body.body else replace(body, body=inner)
        first = body.seq[0] if isinstance(body, SeqStmt) else body
        if is_sync(first, self.scope):
            return body
        return seq(storage_sync(self.scope), body)
