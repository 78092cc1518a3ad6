"""The well-formedness verifier for TIR functions and modules.

Checks, reporting every problem with the offending node named (never crashing on bad input):
- every variable is defined once (parameter, let, loop, allocation, thread binding) and before use;
- every buffer accessed is declared (buffer map, `DeclBuffer`) or its data pointer is defined;
- binary operands agree in dtype, conditions are boolean, stored values match the buffer dtype,
  loop bounds match the loop variable's dtype, buffer indices match the buffer's rank;
- thread bindings are consistent: within one kernel a thread tag keeps one extent and is not
  re-bound inside itself;
- a `Call` to a `GlobalVar` names a function of the module;
- no node has a problem of its own (`kiln.tir.analysis.problems`: a division by the constant zero,
  a shift by an out-of-range constant, a constant index out of a constant dimension, a store
  whose value lanes differ from its index lanes, a negative or non-integer dimension, a void
  buffer), and a function with a return type returns on every path;
- no access is out of its buffer at every point of its loops' ranges that reaches it
  (`kiln.tir.analysis.access_bounds`: affine indices of unguarded accesses only).
"""

from __future__ import annotations

from typing import Any

from kiln.errors import VerifyError
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.node import Node, repr_short
from kiln.ir.visitor import Visitor
from kiln.tir.analysis.access_bounds import out_of_bounds_accesses
from kiln.tir.analysis.problems import (
    always_returns,
    buffer_problem,
    expr_problem,
    func_problem,
    returns_value,
    stmt_problem,
)
from kiln.tir.buffer import Buffer
from kiln.tir.expr import (
    ARITH_OPS,
    CMP_OPS,
    And,
    BinaryOp,
    BufferLoad,
    Call,
    Let,
    Not,
    Or,
    PrimExpr,
    Select,
    Var,
    is_const_int,
)
from kiln.tir.function import PrimFunc
from kiln.tir.stmt import (
    Allocate,
    AttrStmt,
    BufferStore,
    DeclBuffer,
    For,
    ForKind,
    IfThenElse,
    IterVar,
    LetStmt,
    Stmt,
    While,
)


class _Checker(Visitor):
    def __init__(self, func_name: str, module: IRModule | None) -> None:
        super().__init__()
        self.func_name = func_name
        self.module = module
        self.scope: list[set[Var]] = [set()]
        self.ever: set[Var] = set()
        self.buffers: list[set[Buffer]] = [set()]
        self.threads: list[dict[str, Any]] = [{}]
        self.active_tags: list[str] = []
        self.errors: list[str] = []
        self.current: Stmt | None = None
        self.marks: dict[int, str] = {}
        """id(statement holding a problem) -> the first problem found there."""
        self.masked = 0
        """How many vector-condition ifs (masked stores) enclose the current node."""

    # -- helpers ------------------------------------------------------------------------------
    def visit(self, n: Any) -> None:
        if not isinstance(n, Stmt):
            problem = expr_problem(n, self.masked > 0) if isinstance(n, PrimExpr) else None
            if problem is not None:
                self.err(n, problem)
            super().visit(n)
            return
        problem = stmt_problem(n, self.masked > 0)
        if problem is not None:
            self.err(n, problem)
        saved, self.current = self.current, n
        try:
            super().visit(n)
        finally:
            self.current = saved

    def err(self, node: Any, msg: str) -> None:
        self.errors.append(f"{self.func_name}: {repr_short(node)}: {msg}")
        where = node if isinstance(node, Stmt) else self.current
        if where is not None:
            self.marks.setdefault(id(where), f"error: {msg}")

    def define(self, v: Any, where: Any) -> None:
        if not isinstance(v, Var):
            self.err(where, f"expected a Var to define, got {type(v).__name__}")
            return
        if v in self.ever:
            self.err(where, f"variable {v.name!r} is defined more than once")
        self.ever.add(v)
        self.scope[-1].add(v)

    def defined(self, v: Var) -> bool:
        return any(v in s for s in self.scope)

    def push(self) -> None:
        self.scope.append(set())
        self.buffers.append(set())

    def pop(self) -> None:
        self.scope.pop()
        self.buffers.pop()

    def declare_buffer(self, buf: Buffer, where: Any) -> None:
        problem = buffer_problem(buf)
        if problem is not None:
            self.err(where, problem)
        for e in (
            *buf.shape,
            *buf.strides,
            *([buf.elem_offset] if buf.elem_offset is not None else []),
        ):
            self.visit(e)
        self.buffers[-1].add(buf)

    def check_buffer(self, buf: Any, node: Any) -> None:
        if not isinstance(buf, Buffer):
            self.err(node, f"expected a Buffer, got {type(buf).__name__}")
            return
        if any(buf in s for s in self.buffers) or self.defined(buf.data):
            return
        self.err(
            node,
            f"buffer {buf.name!r} is used but never declared and its data pointer "
            f"{buf.data.name!r} is not defined",
        )

    def body_scoped(self, *nodes: Any) -> None:
        self.push()
        try:
            for n in nodes:
                if n is not None:
                    self.visit(n)
        finally:
            self.pop()

    # -- expressions --------------------------------------------------------------------------
    def visit_Var(self, v: Var) -> None:
        if not self.defined(v):
            self.err(v, f"variable {v.name!r} is used before it is defined (or out of scope)")

    visit_SizeVar = visit_Var

    def generic_visit(self, n: Any) -> None:
        if isinstance(n, BinaryOp):
            self.check_binary(n)
        for field in ("body", "then_case", "else_case"):
            child = getattr(n, field, None)
            if child is not None and not isinstance(child, (Stmt, PrimExpr)):
                self.err(n, f"{field} must be a statement, got {type(child).__name__}")
        super().generic_visit(n)

    def check_binary(self, n: BinaryOp) -> None:
        a, b = n.a, n.b
        if not (isinstance(a, PrimExpr) and isinstance(b, PrimExpr)):
            self.err(n, "operands must be expressions")
            return
        if a.dtype != b.dtype:
            self.err(n, f"operand dtypes differ: {a.dtype} vs {b.dtype}")
        if isinstance(n, (And, Or)) and not a.dtype.is_bool:
            self.err(n, f"logical operands must be bool, got {a.dtype}")
        if isinstance(n, ARITH_OPS) and n.dtype != a.dtype:
            self.err(n, f"result dtype {n.dtype} differs from operand dtype {a.dtype}")
        if isinstance(n, CMP_OPS) and not n.dtype.is_bool:
            self.err(n, f"comparison must produce bool, declares {n.dtype}")

    def visit_Not(self, n: Not) -> None:
        if not n.a.dtype.is_bool:
            self.err(n, f"Not expects a bool operand, got {n.a.dtype}")
        self.generic_visit(n)

    def visit_Select(self, n: Select) -> None:
        self.check_cond(n.condition, n)
        if n.true_value.dtype != n.false_value.dtype:
            self.err(n, f"branch dtypes differ: {n.true_value.dtype} vs {n.false_value.dtype}")
        self.generic_visit(n)

    def visit_Let(self, n: Let) -> None:
        self.visit(n.value)
        self.push()
        self.define(n.var, n)
        self.visit(n.body)
        self.pop()

    def visit_BufferLoad(self, n: BufferLoad) -> None:
        self.check_buffer(n.buffer, n)
        self.check_rank(n.buffer, n.indices, n)
        for i in n.indices:
            self.visit(i)

    def visit_Call(self, n: Call) -> None:
        if isinstance(n.op, GlobalVar) and self.module is not None and n.op not in self.module:
            if n.op.name_hint not in self.module:
                self.err(n, f"calls {n.op.name_hint!r}, which is not a function of the module")
        for a in n.args:
            self.visit(a)

    def check_rank(self, buf: Any, indices: tuple[Any, ...], node: Any) -> None:
        if isinstance(buf, Buffer) and len(indices) != len(buf.shape):
            self.err(
                node,
                f"buffer {buf.name!r} has rank {len(buf.shape)}, indexed with "
                f"{len(indices)} indices",
            )

    def check_cond(self, cond: Any, node: Any) -> None:
        if isinstance(cond, PrimExpr) and not (cond.dtype.is_bool or cond.dtype.is_integer):
            self.err(node, f"condition must be bool, got {cond.dtype}")

    # -- statements ---------------------------------------------------------------------------
    def visit_LetStmt(self, s: LetStmt) -> None:
        self.visit(s.value)
        if s.value.dtype != s.var.dtype:
            self.err(s, f"let value dtype {s.value.dtype} differs from {s.var.name}: {s.var.dtype}")
        self.push()
        self.define(s.var, s)
        self.visit(s.body)
        self.pop()

    def visit_For(self, s: For) -> None:
        self.visit(s.min)
        self.visit(s.extent)
        for bound in (s.min, s.extent):
            if bound.dtype != s.loop_var.dtype:
                self.err(
                    s,
                    f"loop bound dtype {bound.dtype} differs from loop variable "
                    f"{s.loop_var.name}: {s.loop_var.dtype}",
                )
        self.push()
        self.define(s.loop_var, s)
        if s.kind == ForKind.THREAD_BINDING:
            tag = s.thread_binding.thread_tag if s.thread_binding else ""
            if not tag:
                self.err(s, "thread-binding loop has no thread tag")
            # NOTE: an outermost binding loop starts a kernel of its own (as an outermost
            # thread_extent attribute does), so sibling kernels may use different extents.
            outermost = not self.active_tags
            if outermost:
                self.threads.append({})
            self.bind_thread(tag, s.extent, s)
            self.visit(s.body)
            self.active_tags.pop()
            if outermost:
                self.threads.pop()
        else:
            self.visit(s.body)
        self.pop()

    def bind_thread(self, tag: str, extent: Any, node: Any) -> None:
        if tag in self.active_tags:
            self.err(node, f"thread {tag!r} is bound again inside its own binding")
        seen = self.threads[-1].get(tag)
        if seen is not None and is_const_int(seen) and is_const_int(extent):
            if seen.value != extent.value:
                self.err(
                    node,
                    f"thread {tag!r} bound with extent {extent.value} but earlier "
                    f"{seen.value} in the same kernel",
                )
        self.threads[-1].setdefault(tag, extent)
        self.active_tags.append(tag)

    def visit_AttrStmt(self, s: AttrStmt) -> None:
        if s.attr_key in ("thread_extent", "virtual_thread") and isinstance(s.node, IterVar):
            self.visit(s.value)
            outermost = not self.active_tags
            if outermost:
                self.threads.append({})
            self.push()
            self.define(s.node.var, s)
            self.bind_thread(s.node.thread_tag, s.value, s)
            self.visit(s.body)
            self.active_tags.pop()
            self.pop()
            if outermost:
                self.threads.pop()
            return
        self.visit(s.value)
        self.push()
        if isinstance(s.node, IterVar):
            self.define(s.node.var, s)
        elif isinstance(s.node, Node) and not isinstance(s.node, (Var, Buffer)):
            self.visit(s.node)
        self.visit(s.body)
        self.pop()

    def visit_IfThenElse(self, s: IfThenElse) -> None:
        self.check_cond(s.condition, s)
        self.visit(s.condition)
        lanes = isinstance(s.condition, PrimExpr) and s.condition.dtype.lanes > 1
        self.masked += lanes
        try:
            self.body_scoped(s.then_case)
        finally:
            self.masked -= lanes
        self.body_scoped(s.else_case)

    def visit_While(self, s: While) -> None:
        self.check_cond(s.condition, s)
        self.visit(s.condition)
        self.body_scoped(s.body)

    def visit_BufferStore(self, s: BufferStore) -> None:
        self.check_buffer(s.buffer, s)
        self.check_rank(s.buffer, s.indices, s)
        if (
            isinstance(s.buffer, Buffer)
            and s.value.dtype.element_of() != s.buffer.dtype.element_of()
        ):
            self.err(
                s,
                f"stores a {s.value.dtype} value into buffer {s.buffer.name!r} of {s.buffer.dtype}",
            )
        self.visit(s.value)
        for i in s.indices:
            self.visit(i)

    def visit_Allocate(self, s: Allocate) -> None:
        for e in s.extents:
            self.visit(e)
        self.visit(s.condition)
        self.push()
        self.define(s.buffer_var, s)
        self.visit(s.body)
        self.pop()

    def visit_DeclBuffer(self, s: DeclBuffer) -> None:
        self.push()
        self.declare_buffer(s.buffer, s)
        self.visit(s.body)
        self.pop()


def _check_func(func: PrimFunc, name: str, module: IRModule | None) -> _Checker:
    c = _Checker(name, module)
    try:
        for p in func.params:
            c.define(p, func)
        # NOTE: the buffer map binds its plain dims together (MakePackedAPI binds them before
        # checking expressions), so ``(n * 2, 4)`` may come before the buffer that binds ``n``.
        for param, buf in func.buffer_map.items():
            if param not in func.params:
                c.err(func, f"buffer_map key {getattr(param, 'name', param)!r} is not a parameter")
            define_buffer_vars(c, buf)
        for buf in func.buffer_map.values():
            c.declare_buffer(buf, func)
        if not isinstance(func.body, Stmt):
            c.err(func, f"body must be a statement, got {type(func.body).__name__}")
        c.visit(func.body)
        for stmt, message in out_of_bounds_accesses(func):
            c.err(stmt, message)
        problem = func_problem(func)
        if problem is not None:
            c.err(func, problem)
        if returns_value(func.ret_type) and not always_returns(func.body):
            c.err(func, f"declares a return type {func.ret_type} but can end without returning")
    except Exception as e:  # the verifier reports; it never crashes on malformed input
        c.errors.append(f"{name}: malformed IR ({type(e).__name__}: {e})")
    return c


def define_buffer_vars(c: _Checker, buf: Buffer) -> None:
    """Symbolic dims first seen in a parameter buffer's shape/strides are defined there."""
    if not c.defined(buf.data):
        c.define(buf.data, buf)
    for e in (
        *buf.shape,
        *buf.strides,
        *([buf.elem_offset] if buf.elem_offset is not None else []),
    ):
        if isinstance(e, Var) and not c.defined(e):
            c.define(e, buf)


def verify_well_formed(obj: PrimFunc | IRModule, raise_error: bool = True) -> list[str]:
    """Check a PrimFunc or every PrimFunc of a module; raise `VerifyError` listing the problems
    and reprinting each bad function with its bad statements marked ``# <-- error: ...``."""
    if isinstance(obj, IRModule):
        checked = [
            (f, _check_func(f, gv.name_hint, obj))
            for gv, f in obj.items()
            if isinstance(f, PrimFunc)
        ]
    elif isinstance(obj, PrimFunc):
        checked = [(obj, _check_func(obj, obj.global_symbol or "<prim_func>", None))]
    else:
        errors = [f"expected a PrimFunc or IRModule, got {type(obj).__name__}"]
        if raise_error:
            raise VerifyError("IR is not well formed:\n  " + errors[0])
        return errors
    errors = [e for _, c in checked for e in c.errors]
    if errors and raise_error:
        shown = [_marked(f, c) for f, c in checked if c.errors]
        listing = "\n  ".join(errors)
        raise VerifyError(f"IR is not well formed:\n  {listing}" + "".join(shown))
    return errors


MAX_LISTING = 120
"""Longest reprint of a bad function; longer ones show only the lines around each mark."""


def _marked(func: PrimFunc, c: _Checker) -> str:
    """``func`` printed with its bad statements marked (empty when it cannot be printed)."""
    try:
        text = func.script(marks=c.marks)
    except Exception:  # printing must never hide the verifier's own report
        return ""
    lines = text.rstrip("\n").splitlines()
    if len(lines) > MAX_LISTING:
        hits = [i for i, line in enumerate(lines) if "# <-- error" in line]
        keep = sorted({j for i in hits for j in range(max(0, i - 8), min(len(lines), i + 3))})
        shown: list[str] = []
        for k, j in enumerate(keep):
            if k == 0 or j != keep[k - 1] + 1:
                shown.append("    ...")
            shown.append(lines[j])
        lines = shown
    return f"\n--- {c.func_name}, problems marked ---\n" + "\n".join(lines)
