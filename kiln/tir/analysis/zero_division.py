"""Run-time guards for `LowerIntrin`: integer division by zero, and index range checks.

C's integer ``/`` and ``%`` by zero trap (SIGFPE on x86), killing the process. `place_guards`
puts an `AssertStmt` before every statement that divides by an integer `kiln.arith` cannot prove
non-zero, so the kernel raises a Python ``ValueError`` naming the division instead. A divisor
that is the constant zero is a `PassError` at build time.

The same placement serves index checks: ``tir.assert_in_range(v, lo, hi, what)`` (the value
``v``, which must lie in ``[lo, hi)``; the gather operators of `kiln.topi` wrap the indices they
read in it) becomes ``v`` and a guard raising `kiln.errors.KernelIndexError` (``<function>:
<what>: index <v> is out of range [<lo>, <hi>)``, the values filled in at run time through a
``tir.format`` message; a vector ``v`` is checked lane by lane and not shown). A check
`kiln.arith` proves (a constant index, an index computed from the loops) is dropped, so proven
indices cost nothing. Index checks are placed in device functions too (a failing one traps
there); division guards only on the host.

Where a guard goes:

- it holds exactly where the division is evaluated: a division in one branch of a scalar
  ``Select`` / ``if_then_else`` or on the right of ``and`` / ``or`` is guarded under that
  branch's condition (``not c or k != 0``), as C evaluates only that branch; a divisor using a
  let-bound variable is guarded with the variable's value substituted;
- it moves out of a loop whose variable it does not use when it calls nothing impure and reads
  no buffer the loop writes (a loop-invariant divisor is checked once, ``extent <= 0 or
  k != 0``, and an index read by a row copy once per row; the loop stays free of error exits:
  parallel loops can still be outlined and vectorized ones keep ``#pragma omp simd``); likewise
  out of ``if`` / ``assert`` (under their condition), lets and allocations it does not use, and
  ahead of the earlier statements of a block that write no buffer it reads;
- one that must stay inside a vectorized loop (it reads the loop variable or a buffer the loop
  writes) makes that loop serial: C forbids leaving an ``omp simd`` loop, and integer division
  does not vectorize anyway;
- a vector divisor is checked lane by lane (``tir.vector_all``), a broadcast one once.

The entry of an exposed function computes the expected shapes of its arguments before the body
runs: a division there by a possibly-zero value is evaluated only when the divisor is non-zero,
and otherwise the expected value is the smallest of its dtype, so the entry's shape check fails
with a ``ValueError`` (`guard_value`).

Float division keeps IEEE semantics (inf / nan) and is never guarded.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

from kiln.arith import Analyzer
from kiln.errors import PassError
from kiln.ir.deep import DeepWalker, stack_safe
from kiln.ir.op import CallEffect, Op
from kiln.ir.structural import structural_equal
from kiln.ir.visitor import Mutator, pre_order_nodes
from kiln.tir import expr as E
from kiln.tir import stmt as S
from kiln.tir.analysis.problems import const_lanes, short
from kiln.tir.functor import substitute

BOOL = E.BOOL
_SYMBOL = {E.Div: "/", E.Mod: "%", E.FloorDiv: "//", E.FloorMod: "%"}
_PURE = (CallEffect.PURE, CallEffect.EXPR_ANNOTATION)


@dataclass(frozen=True)
class Guard:
    """``cond`` must hold before the statement that divides in ``text`` runs; an index check
    carries its own ``message``."""

    cond: E.PrimExpr
    text: str
    message: E.PrimExpr | None = None


def place_guards(
    body: S.Stmt, where: str, pass_name: str, divisions: bool = True, dims: Any = None
) -> S.Stmt:
    """``body`` with guards before its index checks and (when ``divisions``) its divisions by
    possibly-zero integers, and its ``assert_in_range`` calls replaced by their values (module
    docstring); ``where`` names the function in messages, ``pass_name`` the pass in errors,
    ``dims`` bounds the symbolic dims (`PackedAPI.dim_bounds`)."""
    g = _Guards(where, pass_name, divisions, dims)
    new, guards = g.stmt(body)
    out = g.wrap(new, guards)
    return _StripChecks().visit(out) if g.checks else out


def guard_value(value: E.PrimExpr, where: str, pass_name: str, dims: Any = None) -> E.PrimExpr:
    """``value`` (an entry check's expected dimension), or, where one of its divisors may be
    zero, ``select(divisors non-zero, value, min of its dtype)``: no dimension or stride equals
    that, so the entry reports a mismatch instead of trapping (module docstring)."""
    g = _Guards(where, pass_name, dims=dims)
    guards = g.expr(value)
    if not guards or not value.dtype.is_int:
        return value
    ok = guards[0].cond
    for more in guards[1:]:
        ok = E.And(ok, more.cond)
    low = E.IntImm(value.dtype, -(1 << (value.dtype.bits - 1)))
    return E.Select(ok, value, low)


class _Guards(DeepWalker):
    def __init__(
        self, where: str, pass_name: str, divisions: bool = True, dims: Any = None
    ) -> None:
        self.where, self.pass_name, self.divisions = where, pass_name, divisions
        self.an = Analyzer(dims)
        self.checks = 0  # index checks met
        self.written: dict[int, frozenset[E.Var] | None] = {}

    # -- expressions: the guards of the divisions they evaluate -------------------------------
    def expr(self, root: Any, pc: E.PrimExpr | None = None) -> list[Guard]:
        """The guards of the divisions ``root`` evaluates, operands before the divisions using
        them (an explicit stack: expressions may nest thousands deep)."""
        out: list[Guard] = []
        stack: list[_Part] = [(root, pc, _NO_LETS, False)]
        while stack:
            e, pc, lets, divide = stack.pop()
            if divide:
                check = _is_op(e, CHECK)
                guard = self.index_check(e, pc, lets) if check else self.division(e, pc, lets)
                if guard is not None:
                    out.append(guard)
            elif isinstance(e, E.PrimExpr) and not isinstance(e, _LEAVES):
                if (
                    self.divisions
                    and isinstance(e, E.INT_DIVISIONS)
                    and e.dtype.element_of().is_integer
                ) or _is_op(e, CHECK):
                    stack.append((e, pc, lets, True))
                stack.extend(reversed(_operands(e, pc, lets)))
        return out

    def division(self, e: E.BinaryOp, pc: Any, lets: dict) -> Guard | None:
        b = substitute(e.b, lets)
        b = b.value if isinstance(b, E.Broadcast) else b
        if const_lanes(b) is not None:
            lo, hi = const_lanes(b)  # type: ignore[misc]
            if lo <= 0 <= hi and (lo == hi or isinstance(b, E.Broadcast)):
                raise self.zero(e)
            if not (lo <= 0 <= hi):
                return None
        if b.dtype.lanes == 1:
            nonzero: E.PrimExpr = E.NE(b, E.IntImm(b.dtype, 0))
            if self.an.can_prove(nonzero):
                return None
        else:
            zero = E.Broadcast(E.IntImm(b.dtype.element_of(), 0), b.dtype.lanes)
            nonzero = E.Call(BOOL, Op.get("tir.vector_all"), (E.NE(b, zero),))
        cond = nonzero if pc is None else E.Or(E.Not(pc), nonzero)
        return Guard(cond, f"{short(e.a)} {_SYMBOL[type(e)]} {short(e.b)}")

    def index_check(self, e: E.Call, pc: Any, lets: dict) -> Guard | None:
        """The guard of ``assert_in_range(v, lo, hi, what)``: ``lo <= v < hi``."""
        self.checks += 1
        v, lo, hi = (substitute(a, lets) for a in e.args[:3])
        what = e.args[3].value if isinstance(e.args[3], E.StringImm) else short(e)
        head = f"KernelIndexError: {self.where}: {what}:"
        inside: E.PrimExpr = E.And(E.LE(lo, v), E.LT(v, hi))
        if self.an.can_prove(inside):
            return None
        message: E.PrimExpr
        if v.dtype.lanes > 1:
            inside = E.Call(BOOL, Op.get("tir.vector_all"), (inside,))
            ends = [x.value if isinstance(x, E.Broadcast) else x for x in (lo, hi)]
            message = E.StringImm(f"{head} an index is out of range [{ends[0]}, {ends[1]})")
        else:
            text = E.StringImm(f"{head} index {{}} is out of range [{{}}, {{}})")
            message = E.Call(E.HANDLE, Op.get("tir.format"), (text, v, lo, hi))
        cond = inside if pc is None else E.Or(E.Not(pc), inside)
        return Guard(cond, what, message)

    def zero(self, e: E.BinaryOp) -> PassError:
        return PassError(
            self.pass_name,
            f"{self.where}: division by zero: the divisor of {short(e)} is the constant 0",
            e,
        )

    # -- statements: (rewritten statement, guards to place before it) --------------------------
    @stack_safe
    def stmt(self, s: S.Stmt) -> tuple[S.Stmt, list[Guard]]:
        if isinstance(s, S.BufferStore):
            return s, self.expr(s.value) + [g for i in s.indices for g in self.expr(i)]
        if isinstance(s, S.Evaluate):
            return s, self.expr(s.value)
        if isinstance(s, S.SeqStmt):
            return self.seq(s)
        if isinstance(s, S.For):
            return self.loop(s)
        if isinstance(s, S.IfThenElse):
            return self.branch(s)
        if isinstance(s, S.While):
            return self.while_loop(s)
        return self.scoped(s)

    def seq(self, s: S.SeqStmt) -> tuple[S.Stmt, list[Guard]]:
        items: list[S.Stmt] = []
        lifted: list[Guard] = []
        scanned, returned = 0, False  # NOTE: earlier items are searched for a return lazily
        for k, item in enumerate(s.seq):
            new, guards = self.stmt(item)
            up, stay = _split(guards, lambda g, before=s.seq[:k]: self.movable(g, before))
            if up:
                returned = returned or any(_has_ret(x) for x in s.seq[scanned:k])
                scanned = k
                if returned:  # a guard may not run before a return that skips its division
                    up, stay = [], guards
            lifted += up
            items.append(self.wrap(new, stay))
        return S.SeqStmt(tuple(items), s.span), lifted

    def movable(self, g: Guard, past: tuple[S.Stmt, ...]) -> bool:
        """Whether ``g`` may move ahead of the statements ``past``: it calls nothing impure and
        reads no buffer they may write."""
        if not _pure(g.cond):
            return False
        read = {n.buffer.data for n in pre_order_nodes(g.cond) if isinstance(n, E.BufferLoad)}
        if not read:
            return True
        for x in past:
            w = self.writes(x)
            if w is None or not read.isdisjoint(w):
                return False
        return True

    def writes(self, s: S.Stmt) -> frozenset[E.Var] | None:
        """The data pointers ``s`` stores through (None: it calls something that may write
        anywhere), memoized per statement."""
        if id(s) not in self.written:
            out: set[E.Var] | None = set()
            for n in pre_order_nodes(s):
                if isinstance(n, S.BufferStore):
                    out.add(n.buffer.data)  # type: ignore[union-attr]
                elif isinstance(n, E.Call) and not (isinstance(n.op, Op) and n.op.effect in _PURE):
                    out = None
                    break
            self.written[id(s)] = None if out is None else frozenset(out)
        return self.written[id(s)]

    def loop(self, s: S.For) -> tuple[S.Stmt, list[Guard]]:
        outer = self.expr(s.min) + self.expr(s.extent)
        with self.an.bound_scope(s.loop_var, (s.min, s.extent)):
            body, guards = self.stmt(s.body)
        up, inner = _split(
            guards, lambda g: not _uses(g.cond, s.loop_var) and self.movable(g, (s.body,))
        )
        kind = s.kind
        if inner and kind == S.ForKind.VECTORIZED:
            kind = S.ForKind.SERIAL  # NOTE: C forbids an error exit from an `omp simd` loop
        body = self.wrap(body, inner)
        empty = E.LE(s.extent, E.IntImm(s.extent.dtype, 0))
        lifted = [replace(g, cond=E.Or(empty, g.cond)) for g in up]
        new = S.For(
            s.loop_var, s.min, s.extent, kind, body, s.thread_binding, s.annotations, s.span
        )
        return new, outer + lifted

    def branch(self, s: S.IfThenElse) -> tuple[S.Stmt, list[Guard]]:
        before = self.expr(s.condition)
        then, g_then = self.stmt(s.then_case)
        other, g_else = self.stmt(s.else_case) if s.else_case is not None else (None, [])
        if s.condition.dtype.lanes > 1:  # a masked store computes every lane
            return S.IfThenElse(s.condition, then, other, s.span), before + g_then + g_else
        if not _pure(s.condition):
            then = self.wrap(then, g_then)
            other = self.wrap(other, g_else) if other is not None else None
            return S.IfThenElse(s.condition, then, other, s.span), before
        c = s.condition
        lifted = [replace(g, cond=E.Or(E.Not(c), g.cond)) for g in g_then]
        lifted += [replace(g, cond=E.Or(c, g.cond)) for g in g_else]
        return S.IfThenElse(c, then, other, s.span), before + lifted

    def while_loop(self, s: S.While) -> tuple[S.Stmt, list[Guard]]:
        before = self.expr(s.condition)
        body, guards = self.stmt(s.body)
        body = self.wrap(body, guards)
        if before:  # the condition is evaluated again after every iteration
            body = S.SeqStmt((body, self.wrap(S.Evaluate(E.IntImm(E.INT32, 0)), before)))
        return S.While(s.condition, body, s.span), before

    def scoped(self, s: S.Stmt) -> tuple[S.Stmt, list[Guard]]:
        """Let, Allocate, DeclBuffer, AttrStmt, AssertStmt: a header, then ``body``."""
        head: list[Guard] = []
        for field in ("value", "condition"):
            if isinstance(getattr(s, field, None), E.PrimExpr):
                head += self.expr(getattr(s, field))
        for ext in getattr(s, "extents", ()):
            head += self.expr(ext)
        if not isinstance(getattr(s, "body", None), S.Stmt):
            return s, head
        bound = _binds(s)
        if isinstance(s, S.LetStmt) and s.var.dtype.is_integer and s.var.dtype.lanes == 1:
            with self.an.bound_scope(s.var, self.an.const_int_bound(s.value)):
                body, guards = self.stmt(s.body)
        else:
            body, guards = self.stmt(s.body)
        cond = s.condition if isinstance(s, S.AssertStmt) else None
        up, stay = _split(
            guards,
            lambda g: not any(_uses(g.cond, v) for v in bound) and (cond is None or _pure(cond)),
        )
        lifted = up if cond is None else [replace(g, cond=E.Or(E.Not(cond), g.cond)) for g in up]
        body = self.wrap(body, stay)
        return _with_body(s, body), head + lifted

    # -- placing guards ----------------------------------------------------------------------
    def wrap(self, s: S.Stmt, guards: list[Guard]) -> S.Stmt:
        """``s`` behind one `AssertStmt` per distinct guard, the first guard outermost."""
        kept: list[Guard] = []
        for g in guards:
            cond = self.an.simplify(g.cond)
            if E.as_const_int(cond) == 1 or any(structural_equal(cond, k.cond) for k in kept):
                continue
            kept.append(replace(g, cond=cond))
        for g in reversed(kept):
            msg = g.message
            if msg is None:
                msg = E.StringImm(
                    f"ValueError: {self.where}: division by zero: the divisor of {g.text} is 0"
                )
            s = S.AssertStmt(g.cond, msg, s, s.span)
        return s


class _StripChecks(Mutator):
    """Every ``assert_in_range(v, ...)`` replaced by ``v`` (its guard is placed)."""

    def visit_Call(self, e: E.Call) -> E.PrimExpr:
        e = self.generic_visit(e)
        return e.args[0] if _is_op(e, CHECK) else e


CHECK = "tir.assert_in_range"
_NO_LETS: dict[E.Var, E.PrimExpr] = {}
_LEAVES = (E.Var, E.IntImm, E.FloatImm, E.StringImm)
_Part = tuple[Any, Any, dict, bool]


def _operands(e: E.PrimExpr, pc: Any, lets: dict) -> list[_Part]:
    """The operands ``e`` evaluates, in order, each with the condition under which C evaluates
    it (one branch of a scalar select, the right side of ``and`` / ``or``) and the values of
    the let-bound variables in scope."""
    if e.dtype.lanes == 1 and (isinstance(e, E.Select) or _is_op(e, "tir.if_then_else")):
        c, t, f = (e.condition, e.true_value, e.false_value) if isinstance(e, E.Select) else e.args
        if c.dtype.lanes == 1:
            cond = substitute(c, lets)
            return [
                (c, pc, lets, False),
                (t, _and(pc, cond), lets, False),
                (f, _and(pc, E.Not(cond)), lets, False),
            ]
    if isinstance(e, (E.And, E.Or)) and e.dtype.lanes == 1:
        cond = substitute(e.a if isinstance(e, E.And) else E.Not(e.a), lets)
        return [(e.a, pc, lets, False), (e.b, _and(pc, cond), lets, False)]
    if isinstance(e, E.Let):
        inner = {**lets, e.var: substitute(e.value, lets)}
        return [(e.value, pc, lets, False), (e.body, pc, inner, False)]
    out: list[_Part] = []
    for name in type(e).field_names():
        child = getattr(e, name)
        for c in child if isinstance(child, tuple) else (child,):
            if isinstance(c, E.PrimExpr):
                out.append((c, pc, lets, False))
    return out


def _and(pc: E.PrimExpr | None, cond: E.PrimExpr) -> E.PrimExpr:
    return cond if pc is None else E.And(pc, cond)


def _is_op(e: Any, name: str) -> bool:
    return isinstance(e, E.Call) and isinstance(e.op, Op) and e.op.name == name


def _pure(e: E.PrimExpr) -> bool:
    """No call with an effect (an expression that may be evaluated twice)."""
    for n in pre_order_nodes(e):
        if isinstance(n, E.Call) and not (isinstance(n.op, Op) and n.op.effect in _PURE):
            return False
    return True


def _uses(e: E.PrimExpr, var: Any) -> bool:
    """Whether ``e`` reads ``var`` (directly, or through a buffer whose data it is)."""
    for n in pre_order_nodes(e):
        if n is var or (isinstance(n, E.BufferLoad) and n.buffer.data is var):
            return True
    return False


def _binds(s: S.Stmt) -> list[Any]:
    """The variables a scoped statement makes visible to its body."""
    if isinstance(s, S.LetStmt):
        return [s.var]
    if isinstance(s, S.Allocate):
        return [s.buffer_var]
    if isinstance(s, S.DeclBuffer):
        return [s.buffer.data]
    if isinstance(s, S.AttrStmt) and isinstance(s.node, S.IterVar):
        return [s.node.var]
    return []


def _with_body(s: Any, body: S.Stmt) -> S.Stmt:
    return s if body is s.body else replace(s, body=body)


def _split(guards: list[Guard], up: Callable[[Guard], bool]) -> tuple[list[Guard], list[Guard]]:
    """(guards for which ``up`` holds, the others), each in order."""
    yes = [g for g in guards if up(g)]
    return yes, [g for g in guards if not up(g)]


def _has_ret(s: S.Stmt) -> bool:
    return any(_is_op(n, "tir.ret") for n in pre_order_nodes(s))
