"""Buffer accesses that the enclosing loops provably take out of the buffer.

`out_of_bounds_accesses(func)` lists every `BufferLoad` / `BufferStore` for which some point of
its enclosing loops' ranges puts an index outside its axis (``A[i + 16]`` for ``i`` in
``range(4)`` over a 16-element ``A``). The verifier reports each one.

The rule (it must never flag a correct kernel, so it is deliberately narrow):

- an index is judged only when it is *affine in loop variables*: a constant plus constant
  multiples of variables of enclosing ``For`` loops (or thread bindings) whose start is a
  constant and whose extent is a constant or mentions no loop variable. Over such loops the
  index's interval from `kiln.arith.linear` is exact: its ends are values the index takes
  whenever the access runs at all (an end of a loop of symbolic extent is unbounded, and only
  the other end is judged). Anything else in the index (a division, a let variable, a
  parameter, a loaded value) leaves the index unjudged;
- an access is judged only when nothing may skip it: not inside an ``if``, a ``while``, an
  ``assert``'s body, a vector-masked store, a ``select`` / ``if_then_else`` branch, the right
  side of ``and`` / ``or``, or the arguments of ``address_of``, ``tvm_access_ptr`` and
  ``prefetch`` (which never dereference); a loop whose extent is a constant <= 0 never runs
  and its body is skipped; a function that may return early (``T.ret``) is not judged;
- only buffers with the dtype and shape of the memory behind their pointer (a parameter's
  buffer, an allocation's) are judged: a view declared over other memory (the buffers
  `MergeSharedMemoryAllocations` places in one allocation) may reach past its own shape;
- an index is out of bounds when its interval reaches below 0 or, for an axis of constant
  extent ``n``, above ``n - 1``.

So a padding read behind a guard, a tail behind ``likely``, or an index through ``//`` and
``%`` is never flagged, and what is flagged is out of bounds in every execution that reaches it.
"""

from __future__ import annotations

from typing import Any

from kiln.arith.bound import NEG_INF, POS_INF, ConstIntBound
from kiln.arith.linear import linear_bound, to_linear
from kiln.ir.op import Op
from kiln.ir.structural import structural_equal
from kiln.ir.visitor import Visitor, pre_order_nodes
from kiln.tir import expr as E
from kiln.tir import stmt as S
from kiln.tir.analysis.problems import short
from kiln.tir.buffer import Buffer
from kiln.tir.function import PrimFunc

_NO_DEREF = ("tir.address_of", "tir.tvm_access_ptr", "tir.prefetch")
_BRANCHES = ("tir.if_then_else",)
_RET = Op.get("tir.ret")


def out_of_bounds_accesses(func: PrimFunc) -> list[tuple[Any, str]]:
    """(statement holding the access, message) for each provably out-of-bounds access (module
    docstring)."""
    if any(isinstance(n, E.Call) and n.op is _RET for n in pre_order_nodes(func.body)):
        return []  # an early return may skip any later access
    finder = _Finder({b.data: (b.dtype, b.shape) for b in func.buffer_map.values()})
    finder.visit(func.body)
    return finder.found


class _Finder(Visitor):
    def __init__(self, owners: dict[E.Var, tuple[Any, tuple[E.PrimExpr, ...]]]) -> None:
        super().__init__()
        self.owners = owners
        """data pointer -> (dtype, shape) of the memory behind it (a parameter or allocation)."""
        self.ranges: dict[E.Var, ConstIntBound] = {}
        self.guarded = 0
        self.found: list[tuple[Any, str]] = []
        self.stmt: S.Stmt | None = None

    def visit(self, n: Any) -> None:
        if not isinstance(n, S.Stmt):
            super().visit(n)
            return
        saved, self.stmt = self.stmt, n
        try:
            super().visit(n)
        finally:
            self.stmt = saved

    # -- scopes -------------------------------------------------------------------------------
    def under_guard(self, *nodes: Any) -> None:
        self.guarded += 1
        try:
            for n in nodes:
                if n is not None:
                    self.visit(n)
        finally:
            self.guarded -= 1

    def with_range(self, var: E.Var, start: E.PrimExpr, extent: E.PrimExpr, body: Any) -> None:
        n = E.as_const_int(extent)
        if n is not None and n <= 0:
            return  # the body never runs
        lo = E.as_const_int(start)
        if lo is None or (n is None and self.mentions_loop_var(extent)):
            self.visit(body)
            return
        self.ranges[var] = ConstIntBound(lo, POS_INF if n is None else lo + n - 1)
        try:
            self.visit(body)
        finally:
            del self.ranges[var]

    def mentions_loop_var(self, e: E.PrimExpr) -> bool:
        return any(isinstance(n, E.Var) and n in self.ranges for n in pre_order_nodes(e))

    # -- statements ---------------------------------------------------------------------------
    def visit_For(self, s: S.For) -> None:
        self.visit(s.min)
        self.visit(s.extent)
        self.with_range(s.loop_var, s.min, s.extent, s.body)

    def visit_AttrStmt(self, s: S.AttrStmt) -> None:
        self.visit(s.value)
        node = s.node
        if s.attr_key == "thread_extent" and isinstance(node, S.IterVar):
            self.with_range(node.var, E.IntImm(node.var.dtype, 0), s.value, s.body)
        else:
            self.visit(s.body)

    def visit_Allocate(self, s: S.Allocate) -> None:
        for e in (*s.extents, s.condition):
            self.visit(e)
        self.owners[s.buffer_var] = (s.dtype, s.extents)
        try:
            self.visit(s.body)
        finally:
            del self.owners[s.buffer_var]

    def visit_IfThenElse(self, s: S.IfThenElse) -> None:
        self.visit(s.condition)
        self.under_guard(s.then_case, s.else_case)

    def visit_While(self, s: S.While) -> None:
        self.under_guard(s.condition, s.body)

    def visit_AssertStmt(self, s: S.AssertStmt) -> None:
        self.visit(s.condition)
        self.under_guard(s.body)

    def visit_BufferStore(self, s: S.BufferStore) -> None:
        self.visit(s.value)
        for i in s.indices:
            self.visit(i)
        self.check(s, s.buffer, s.indices)

    # -- expressions --------------------------------------------------------------------------
    def visit_BufferLoad(self, e: E.BufferLoad) -> None:
        for i in e.indices:
            self.visit(i)
        self.check(e, e.buffer, e.indices)

    def visit_Select(self, e: E.Select) -> None:
        self.visit(e.condition)
        self.under_guard(e.true_value, e.false_value)

    def visit_And(self, e: E.And) -> None:
        self.visit(e.a)
        self.under_guard(e.b)

    visit_Or = visit_And

    def visit_Call(self, e: E.Call) -> None:
        name = e.op.name if isinstance(e.op, Op) else ""
        if name in _NO_DEREF:
            return
        if name in _BRANCHES:
            self.visit(e.args[0])
            self.under_guard(*e.args[1:])
            return
        for a in e.args:
            self.visit(a)

    # -- the check ----------------------------------------------------------------------------
    def owns(self, buf: Buffer) -> bool:
        """Whether ``buf`` has the dtype and shape of the memory behind its pointer (a view of
        other memory, such as a merged shared buffer, may reach past its declared shape)."""
        owner = self.owners.get(buf.data)
        if owner is None or owner[0] != buf.dtype or len(owner[1]) != len(buf.shape):
            return False
        return all(a is b or structural_equal(a, b) for a, b in zip(owner[1], buf.shape))

    def check(self, node: Any, buf: Buffer, indices: tuple[E.PrimExpr, ...]) -> None:
        if self.guarded or not self.ranges or not isinstance(buf, Buffer) or not self.owns(buf):
            return
        for axis, (index, dim) in enumerate(zip(indices, buf.shape)):
            span = self.index_range(index)
            if span is None:
                continue
            n = E.as_const_int(dim)
            below = span.min_value != NEG_INF and span.min_value < 0
            above = n is not None and span.max_value != POS_INF and span.max_value > n - 1
            above = above or (n is not None and span.min_value > n - 1)
            if below or above:
                valid = f"[0, {n - 1}]" if n is not None else f"[0, {short(dim)})"
                self.found.append(
                    (
                        self.stmt,
                        f"access {buf.name}[{', '.join(short(i) for i in indices)}] is out of "
                        f"bounds: index {short(index)} ranges over {_show(span)} in its loops, "
                        f"outside axis {axis} of buffer {buf.name!r} ({valid})",
                    )
                )
                return

    def index_range(self, index: E.PrimExpr) -> ConstIntBound | None:
        """The exact interval of an affine index over the ranged loops, else None."""
        if isinstance(index, E.Broadcast):
            index = index.value
        lanes = ConstIntBound(0, 0)
        if isinstance(index, E.Ramp):
            stride = E.as_const_int(index.stride)
            if stride is None:
                return None
            last = stride * (index.lanes - 1)
            lanes = ConstIntBound(min(0, last), max(0, last))
            index = index.base
        if not index.dtype.is_integer or index.dtype.lanes != 1:
            return None
        lin = to_linear(index)
        if lin.is_const or any(a not in self.ranges for a, _ in lin.items()):
            return None
        span = linear_bound(lin, lambda a: self.ranges[a])  # type: ignore[index]
        return ConstIntBound(span.min_value + lanes.min_value, span.max_value + lanes.max_value)


def _show(b: ConstIntBound) -> str:
    lo = "-inf" if b.min_value == NEG_INF else str(b.min_value)
    hi = "inf" if b.max_value == POS_INF else str(b.max_value)
    return f"[{lo}, {hi}]"
