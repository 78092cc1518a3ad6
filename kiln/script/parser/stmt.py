"""Parsing of script statements into TIR statements.

A block is parsed statement by statement. A *frame* used without ``with`` (``x: T.int32 = v``,
``x = expr``, ``tx = T.launch_thread(...)``, ``A = T.alloc_buffer(...)``, ``assert c, "m"``) wraps
the rest of its block; the parser keeps a stack of such open frames instead of recursing, so a
long function with many lets parses in constant Python stack depth.
"""

from __future__ import annotations

import ast
import builtins
import types
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kiln.errors import ScriptError
from kiln.ir.op import Op
from kiln.ir.span import Span
from kiln.script.parser.expr import (
    USER_ERRORS,
    ExprEvaluator,
    debug_cause,
    fill_below,
    internal_error,
    is_number,
    one_line,
    one_line_repr,
)
from kiln.script.tir_ns.frames import (
    AssertFrame,
    EnvThreadSpec,
    Frame,
    FuncAttrs,
    GridSpec,
    LetFrame,
    LoopSpec,
    MatchBufferSpec,
    loop_bounds,
)
from kiln.script.tir_ns.types import BufferSpec, DTypeCtor, VarSpec, check_float_range
from kiln.tir.analysis.problems import stmt_problem
from kiln.tir.buffer import Buffer
from kiln.tir.expr import Broadcast, BufferLoad, Call, PrimExpr, Var, convert
from kiln.tir.stmt import (
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IterKind,
    IterVar,
    SeqStmt,
    Stmt,
    While,
)

_UNSUPPORTED_STMT = {
    "Try": "try statements are not supported in a script",
    "TryStar": "try statements are not supported in a script",
    "Raise": 'raise is not supported in a script; use assert cond, "message"',
    "FunctionDef": "nested function definitions are not supported in a script",
    "AsyncFunctionDef": "nested function definitions are not supported in a script",
    "ClassDef": "class definitions are not supported inside a script function",
    "Break": "break is not supported: TIR loops run to completion",
    "Continue": "continue is not supported: TIR loops run to completion",
    "Import": "import statements are not supported inside a script function",
    "ImportFrom": "import statements are not supported inside a script function",
    "Global": "global is not supported in a script",
    "Nonlocal": "nonlocal is not supported in a script",
    "Delete": "del is not supported in a script",
    "Match": "match statements are not supported in a script",
    "AsyncFor": "async for is not supported in a script",
    "AsyncWith": "async with is not supported in a script",
}


@dataclass
class Open:
    """A frame that wraps the rest of the current block (entered already)."""

    frame: Frame
    node: ast.stmt
    span: Span


class StmtParser(ExprEvaluator, ABC):
    """Statements of one function body; subclasses supply function-level hooks."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.loop_names: list[set[str]] = [set()]
        self.depth = 0
        self.ret_dtype: Any = None

    # -- hooks the function parser provides ------------------------------------------------------
    def env_thread(self, var: Var) -> IterVar | None:
        return None

    @abstractmethod
    def register_env_thread(self, iv: IterVar) -> None:
        """Record ``iv`` as the function's thread variable for its tag (the function parser)."""

    def func_attr(self, attrs: FuncAttrs, node: ast.stmt) -> None:
        raise self.src.error(node, "T.func_attr is only allowed in a function body")

    def match_buffer(self, name: str, spec: MatchBufferSpec, node: ast.stmt) -> Buffer:
        raise self.src.error(node, "T.match_buffer is only allowed in a function body")

    # -- scopes ----------------------------------------------------------------------------------
    @contextmanager
    def scope(self) -> Iterator[None]:
        self.scopes.append({})
        self.loop_names.append(set())
        self.depth += 1
        try:
            yield
        finally:
            self.scopes.pop()
            self.loop_names.pop()
            self.depth -= 1

    def bind(self, name: str, value: Any, node: ast.AST, loop: bool = False) -> None:
        if not loop:
            for scope, loops in zip(reversed(self.scopes), reversed(self.loop_names)):
                if name in scope:
                    if name in loops:
                        raise self.src.error(node, f"cannot assign to loop variable {name!r}")
                    break
        self.scopes[-1][name] = value
        if loop:
            self.loop_names[-1].add(name)

    # -- blocks ----------------------------------------------------------------------------------
    def parse_body(self, stmts: list[ast.stmt]) -> Stmt:
        items: list[Stmt] = []
        opened: list[tuple[Open, list[Stmt]]] = []
        for node in stmts:
            res = self.visit_stmt(node)
            if isinstance(res, Open):
                opened.append((res, items))
                items = []
            elif res is not None:
                items.append(res)
        body = self.sequence(items, stmts[-1] if stmts else None)
        for res, before in reversed(opened):
            inner = self.at(res.node, res.frame.exit, body, res.span)
            body = self.sequence([*before, inner], res.node)
        return body

    def sequence(self, items: list[Stmt], node: ast.AST | None) -> Stmt:
        flat: list[Stmt] = []
        for s in items:
            flat.extend(s.seq if isinstance(s, SeqStmt) else (s,))
        span = self.src.span(node) if node is not None else None
        if not flat:
            return Evaluate(convert(0), span)
        return flat[0] if len(flat) == 1 else SeqStmt(tuple(flat), flat[0].span or span)

    def visit_stmt(self, node: ast.stmt) -> Stmt | Open | None:
        """One statement; mistakes become `ScriptError`s at ``node``."""
        method = getattr(self, f"s_{type(node).__name__}", None)
        if method is None:
            reason = _UNSUPPORTED_STMT.get(type(node).__name__)
            raise self.src.error(node, reason or f"unsupported statement: {type(node).__name__}")
        try:
            res = method(node)
        except ScriptError:
            raise
        except USER_ERRORS as e:
            raise self.src.error(node, one_line(e)) from None
        except Exception as e:
            raise internal_error(self.src, node, e) from debug_cause(e)
        problem = stmt_problem(res) if isinstance(res, Stmt) else None
        if problem is not None:
            raise self.src.error(node, problem)
        return res

    def open(self, frame: Frame, name: str | None, node: ast.stmt, target: ast.AST) -> Open:
        """Enter ``frame`` for the rest of the block, binding ``name`` to what it makes."""
        span = self.src.span(node)
        value = self.at(getattr(node, "value", node), frame.enter, self, name, span)
        if isinstance(value, Buffer):
            fill_below(value, span)
        if name is not None:
            self.bind(name, value, target)
        return Open(frame, node, span)

    # -- simple statements -----------------------------------------------------------------------
    def s_Pass(self, node: ast.Pass) -> None:
        return None

    def s_Expr(self, node: ast.Expr) -> Stmt | Open | None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None  # a docstring or a comment string
        self.refuse_python_call(node.value)
        value = self.eval(node.value)
        if isinstance(value, Stmt):
            return value
        if isinstance(value, Frame):
            return self.open(value, None, node, node)
        if isinstance(value, FuncAttrs):
            self.func_attr(value, node)
            return None
        if isinstance(value, PrimExpr):
            return Evaluate(value, self.src.span(node))
        raise self.src.error(
            node,
            f"this statement means nothing in TIR: it evaluates to the Python value "
            f"{one_line_repr(value)} while parsing (a statement is a T call, a store, a loop...)",
        )

    def refuse_python_call(self, e: ast.expr) -> None:
        """A statement calling a Python builtin (``print(...)``) is refused before it runs."""
        if not (isinstance(e, ast.Call) and isinstance(e.func, ast.Name)):
            return
        func = self.lookup(e.func.id, e.func)
        if isinstance(func, types.BuiltinFunctionType) and func.__module__ == "builtins":
            raise self.src.error(
                e,
                f"{e.func.id}(...) is Python code that would run while parsing and leave nothing "
                "in the IR; remove it",
            )

    def s_Assign(self, node: ast.Assign) -> Stmt | Open | None:
        if len(node.targets) != 1:
            raise self.src.error(node, "chained assignment (a = b = ...) is not supported")
        target = node.targets[0]
        if isinstance(target, ast.Subscript):
            return self.store(target, self.eval(node.value), node)
        value = self.eval(node.value)
        if isinstance(target, ast.Name):
            return self.assign(target, value, node)
        if isinstance(target, (ast.Tuple, ast.List)) and all(
            isinstance(t, ast.Name) for t in target.elts
        ):
            if not isinstance(value, (tuple, list)) or len(value) != len(target.elts):
                raise self.src.error(node, f"cannot unpack {value!r} into {len(target.elts)} names")
            for t, v in zip(target.elts, value):
                if isinstance(v, (Frame, PrimExpr)):
                    raise self.src.error(
                        t, "a TIR expression cannot be unpacked; bind one name per line"
                    )
                self.assign(t, v, node)  # type: ignore[arg-type]
            return None
        raise self.src.error(target, f"cannot assign to {ast.unparse(target)}")

    def assign(self, target: ast.Name, value: Any, node: ast.stmt) -> Open | None:
        name, span = target.id, self.src.span(target)
        if isinstance(value, Frame):
            return self.open(value, name, node, target)
        if isinstance(value, PrimExpr):
            return self.open(LetFrame(value), name, node, target)
        if isinstance(value, VarSpec):
            value = self.at(node.value, value.make, name, span)
        elif isinstance(value, EnvThreadSpec):
            iv = self.at(node.value, value.make, name, span)
            self.register_env_thread(iv)
            value = iv.var
        elif isinstance(value, BufferSpec):
            value = self.at(node.value, value.build, name, span)
        elif isinstance(value, MatchBufferSpec):
            value = self.match_buffer(name, value, node)
        if isinstance(value, Buffer):
            fill_below(value, span)
        self.bind(name, value, target)
        return None

    def s_AnnAssign(self, node: ast.AnnAssign) -> Open:
        if not isinstance(node.target, ast.Name):
            raise self.src.error(node.target, "only a name can be declared with a type")
        if node.value is None:
            raise self.src.error(node, "a typed name needs a value, as in x: T.int32 = 0")
        ann = self.eval(node.annotation)
        if isinstance(ann, DTypeCtor):
            ann = ann.spec()
        if not isinstance(ann, VarSpec):
            raise self.src.error(node.annotation, "expected a type such as T.int32 or T.handle")
        value = self.eval(node.value)
        var = self.at(node.annotation, ann.make, node.target.id, self.src.span(node.target))
        return self.open(LetFrame(value, var=var), node.target.id, node, node.target)

    def s_AugAssign(self, node: ast.AugAssign) -> Stmt:
        target = node.target
        if not isinstance(target, ast.Subscript):
            name = ast.unparse(target)
            for scope, loops in zip(reversed(self.scopes), reversed(self.loop_names)):
                if name in scope and name in loops:
                    raise self.src.error(target, f"cannot assign to loop variable {name!r}")
            raise self.src.error(
                node, f"cannot update {name!r} in place: TIR variables are immutable"
            )
        load = self.eval(target)
        if not isinstance(load, BufferLoad):
            raise self.src.error(target, "only buffer elements can be updated in place")
        rhs = ast.BinOp(left=target, op=node.op, right=node.value)
        ast.copy_location(rhs, node)
        ast.fix_missing_locations(rhs)
        return self.store(target, self.eval(rhs), node)

    def store(self, target: ast.Subscript, value: Any, node: ast.stmt) -> Stmt:
        buf = self.eval(target.value)
        if not isinstance(buf, Buffer):
            what = ast.unparse(target.value)
            raise self.src.error(
                target.value, f"{what!r} is not a buffer; only buffers are stored to"
            )
        indices = self.buffer_indices(buf, target.slice, target)
        if not (isinstance(value, PrimExpr) or is_number(value)):
            raise self.src.error(
                node.value if hasattr(node, "value") else node,
                f"cannot store a {type(value).__name__} into buffer {buf.name!r}",
            )
        if is_number(value) and buf.dtype.is_float:
            check_float_range(value, buf.dtype, f"{value!r} stored into buffer {buf.name!r}")
        lanes = convert(indices[-1]).dtype.lanes if indices else 1
        if lanes > 1 and (is_number(value) or value.dtype.lanes == 1):
            # NOTE: a scalar stored into a slice fills it (``A[0:4] = 0``), as in TVM
            value = Broadcast(convert(value, buf.dtype), lanes)
        return BufferStore(buf, value, indices, self.src.span(node))

    def s_Return(self, node: ast.Return) -> Stmt:
        if node.value is None:
            raise self.src.error(node, "return needs a value (a function without one just ends)")
        if self.ret_dtype is None:
            raise self.src.error(
                node, "a function that returns a value needs a return type, as in -> T.int32"
            )
        value = self.eval(node.value)
        if is_number(value):
            value = convert(value, self.ret_dtype)
        if not isinstance(value, PrimExpr):
            raise self.src.error(node.value, f"cannot return a {type(value).__name__}")
        call = Call(value.dtype, Op.get("tir.ret"), (value,), self.src.span(node))
        return Evaluate(call, self.src.span(node))

    def s_Assert(self, node: ast.Assert) -> Open | None:
        cond = self.eval(node.test)
        msg = self.eval(node.msg) if node.msg is not None else ""
        if not isinstance(cond, PrimExpr):
            if not self.truth(cond, node.test):
                raise self.src.error(node, f"assertion failed while parsing: {msg}")
            return None
        return self.open(AssertFrame(cond, msg), None, node, node)

    # -- compound statements ---------------------------------------------------------------------
    def s_If(self, node: ast.If) -> Stmt | None:
        cond = self.eval(node.test)
        if not isinstance(cond, PrimExpr):  # a Python condition picks a branch while parsing
            chosen = node.body if self.truth(cond, node.test) else node.orelse
            if not chosen:
                return None
            with self.scope():
                return self.parse_body(chosen)
        with self.scope():
            then = self.parse_body(node.body)
        orelse = None
        if node.orelse:
            with self.scope():
                orelse = self.parse_body(node.orelse)
        return IfThenElse(cond, then, orelse, self.src.span(node))

    def s_While(self, node: ast.While) -> Stmt:
        if node.orelse:
            raise self.src.error(node, "while ... else is not supported")
        cond = self.eval(node.test)
        if not isinstance(cond, PrimExpr):
            raise self.src.error(node.test, "a while condition must be a TIR expression")
        with self.scope():
            body = self.parse_body(node.body)
        return While(cond, body, self.src.span(node))

    def s_With(self, node: ast.With) -> Stmt:
        entered: list[tuple[Frame, ast.AST, Span]] = []
        with self.scope():
            for item in node.items:
                frame = self.eval(item.context_expr)
                if not isinstance(frame, Frame):
                    raise self.src.error(
                        item.context_expr,
                        "`with` needs a T frame such as T.attr, T.LetStmt, T.launch_thread, "
                        "T.allocate, T.decl_buffer or T.Assert",
                    )
                target = item.optional_vars
                if target is not None and not isinstance(target, ast.Name):
                    raise self.src.error(target, "`as` needs a single name")
                name = target.id if isinstance(target, ast.Name) else None
                span = self.src.span(item.context_expr)
                value = self.at(item.context_expr, frame.enter, self, name, span)
                if isinstance(value, Buffer):
                    fill_below(value, span)
                if target is not None and name is not None:
                    self.bind(name, value, target)
                entered.append((frame, item.context_expr, span))
            body = self.parse_body(node.body)
        for frame, where, span in reversed(entered):
            body = self.at(where, frame.exit, body, span)
        return body

    def s_For(self, node: ast.For) -> Stmt:
        if node.orelse:
            raise self.src.error(node, "for ... else is not supported")
        spec = self.loop_spec(node.iter)
        if isinstance(spec, (LoopSpec, GridSpec)):
            return self.tir_loop(node, spec)
        if isinstance(spec, (list, tuple)) and isinstance(node.target, ast.Name):
            out = []  # a Python sequence unrolls while parsing
            for item in spec:
                with self.scope():
                    self.bind(node.target.id, item, node.target, loop=True)
                    out.append(self.parse_body(node.body))
            return self.sequence(out, node)
        raise self.src.error(
            node.iter, "a loop must run over range(...), T.serial(...), T.grid(...) and the like"
        )

    def loop_spec(self, it: ast.expr) -> Any:
        if isinstance(it, ast.Call):
            func = self.eval(it.func)
            if func is builtins.range:
                if it.keywords or not 1 <= len(it.args) <= 2:
                    raise self.src.error(it, "range() in a script takes (stop) or (start, stop)")
                return LoopSpec(ForKind.SERIAL, *self.eval_items(it.args))
        return self.eval(it)

    def tir_loop(self, node: ast.For, spec: LoopSpec | GridSpec) -> Stmt:
        if isinstance(spec, GridSpec):
            targets = node.target.elts if isinstance(node.target, ast.Tuple) else [node.target]
            if len(targets) != len(spec.extents):
                raise self.src.error(
                    node.target, f"T.grid has {len(spec.extents)} extents but {len(targets)} names"
                )
            specs = [LoopSpec(ForKind.SERIAL, e) for e in spec.extents]
        else:
            targets, specs = [node.target], [spec]
        loops = []
        with self.scope():
            for target, s in zip(targets, specs):
                if not isinstance(target, ast.Name):
                    raise self.src.error(target, "a loop variable must be a plain name")
                lo, extent = self.at(node.iter, loop_bounds, s.start, s.stop)
                var = Var(target.id, lo.dtype, span=self.src.span(target))
                self.bind(target.id, var, target, loop=True)
                loops.append((var, lo, extent, s))
            body = self.parse_body(node.body)
        span = self.src.span(node)
        for var, lo, extent, s in reversed(loops):
            binding = None
            if s.kind is ForKind.THREAD_BINDING:
                binding = IterVar(None, var, IterKind.THREAD_INDEX, s.thread or "", span)
            body = self.at(
                node.iter, For, var, lo, extent, s.kind, body, binding, s.annotations or {}, span
            )
        return body
