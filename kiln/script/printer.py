"""The script printer: IRModule / PrimFunc / statements / expressions → TVMScript text.

The output parses back (`kiln.script.from_source`) into a structurally equal module. Scoped
statements print *flat* when they end their block (``x: T.int32 = v`` followed by the body at
the same indentation, likewise ``T.launch_thread``, ``T.alloc_buffer``, ``T.allocate``,
``T.decl_buffer`` and ``assert``) and as ``with`` blocks otherwise. Buffers that something loads
or stores but nothing declares print as ``B = T.Buffer(..., data=p)`` right after ``p`` is
defined. Nested `SeqStmt`s print flattened (the parser never builds them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kiln.ir.deep import stack_safe
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.node import Node
from kiln.ir.structural import structural_equal
from kiln.relax.expr import Function
from kiln.script.metadata import MetadataWriter
from kiln.script.printer_expr import EXPR_RESERVED, STRICT, ExprPrinter, ScriptNameSupply, quote
from kiln.script.printer_relax import HEADER as RELAX_HEADER
from kiln.script.printer_relax import RelaxPrinter, print_relax
from kiln.script.tir_ns.frames import thread_attr_key
from kiln.script.tir_ns.intrin import ITER_KIND_NAMES
from kiln.tir.buffer import Buffer
from kiln.tir.expr import Add, BufferLoad, Call, IntImm, Let, PrimExpr, Sub, Var
from kiln.tir.function import PrimFunc
from kiln.tir.stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    BufferStore,
    DeclBuffer,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IterKind,
    IterVar,
    LetStmt,
    SeqStmt,
    Stmt,
    While,
)
from kiln.tir.type import PointerType, PrimType

HEADER = "# from kiln.script import ir as I, tir as T"
_LOOP_FUNCS = {
    ForKind.SERIAL: "T.serial",
    ForKind.PARALLEL: "T.parallel",
    ForKind.VECTORIZED: "T.vectorized",
    ForKind.UNROLLED: "T.unroll",
    ForKind.THREAD_BINDING: "T.thread_binding",
}
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass
class Scan:
    """What a body uses and defines, and the buffers nothing declares (keyed by data var)."""

    used: dict[int, Var] = field(default_factory=dict)
    defined: set[int] = field(default_factory=set)
    views: dict[int, list[Buffer]] = field(default_factory=dict)


def _defines(n: Node) -> Var | None:
    if isinstance(n, For):
        return n.loop_var
    if isinstance(n, (LetStmt, Let)):
        return n.var
    if isinstance(n, Allocate):
        return n.buffer_var
    if isinstance(n, AttrStmt) and isinstance(n.node, IterVar):
        return n.node.var
    return None


def scan(root: Any, declared: set[int]) -> Scan:
    """Walk ``root`` once (shared subtrees once) collecting a `Scan`."""
    out, seen, stack = Scan(), set(), [root]
    while stack:
        n = stack.pop()
        if isinstance(n, tuple):
            stack.extend(reversed(n))
            continue
        if not isinstance(n, Node) or id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, Var):
            out.used[id(n)] = n
        var = _defines(n)
        if var is not None:
            out.defined.add(id(var))
        if isinstance(n, DeclBuffer):
            declared.add(id(n.buffer))
        buf = n.buffer if isinstance(n, (BufferLoad, BufferStore)) else None
        if isinstance(n, AttrStmt) and isinstance(n.node, Buffer):
            buf = n.node
        if buf is not None and id(buf) not in declared and id(buf) not in seen:
            out.views.setdefault(id(buf.data), []).append(buf)
            seen.add(id(buf))
        for name in n.field_names():
            if name != "span":
                child = getattr(n, name)
                if isinstance(child, (Node, tuple)):
                    stack.append(child)
    return out


def _is_nop(s: Stmt) -> bool:
    v = s.value if isinstance(s, Evaluate) else None
    return isinstance(v, IntImm) and v.value == 0 and str(v.dtype) == "int32"


def _is_zero(e: Any, dtype: Any) -> bool:
    return isinstance(e, IntImm) and e.value == 0 and e.dtype == dtype


class Printer(ExprPrinter):
    """Prints statements, functions and modules (see the module docstring)."""

    def __init__(self, module_name: str = "Module", meta: MetadataWriter | None = None) -> None:
        super().__init__(module_name)
        self.meta = meta
        """Shared by the relax functions of a module: one numbering of elided constants."""
        self.lines: list[str] = []
        self.views: dict[int, list[Buffer]] = {}
        self.ret_dtype: Any = None
        self.marks: dict[int, str] = {}
        """id(statement) -> a note appended to the first line printed for it (`VerifyError`)."""

    def emit(self, ind: int, text: str) -> None:
        pad = "    " * ind
        self.lines.extend(pad + p for p in self.pre)
        self.pre.clear()
        self.lines.append(pad + text)

    def defined(self, var: Var, ind: int) -> None:
        """After ``var``'s definition: declare the buffer views on it."""
        for buf in self.views.pop(id(var), ()):
            data = self.expr(buf.data)
            name = self.define(buf)
            self.emit(ind, f"{name} = T.Buffer({self.buffer_args(buf, 'view', data)})")

    # -- blocks ----------------------------------------------------------------------------------
    def block(self, s: Stmt, ind: int) -> None:
        """Print ``s`` as the statements of one block; flat scopes continue the loop."""
        flat = False
        while True:
            if flat and _is_nop(s):
                return
            items = s.seq if isinstance(s, SeqStmt) else (s,)
            if not items:
                return
            for item in items[:-1]:
                self.stmt(item, ind, last=False)
            nxt = self.stmt(items[-1], ind, last=True)
            if nxt is None:
                return
            s, flat = nxt, True

    def body(self, s: Stmt, ind: int, define: Var | None = None) -> None:
        if define is not None:
            self.defined(define, ind)
        self.block(s, ind)

    @stack_safe
    def stmt(self, s: Stmt, ind: int, last: bool) -> Stmt | None:
        """Print one statement; a flat-printed scope returns its body for the caller to print."""
        method = getattr(self, f"s_{type(s).__name__}", None)
        if method is None:
            self.emit(ind, f"T.evaluate(0)  # unprintable {type(s).__name__}")
            return None
        first = len(self.lines)
        out = method(s, ind, last)
        note = self.marks.get(id(s))
        if note is not None and len(self.lines) > first:
            self.lines[first] += f"  # <-- {note}"
        return out

    def scoped(self, ind: int, last: bool, name: str, text: str, body: Stmt, var: Any) -> Any:
        """``name = text`` + body flat, or ``with text as name:`` + indented body."""
        if last:
            self.emit(ind, f"{name} = {text}")
            self.defined(var, ind)
            return body
        self.emit(ind, f"with {text} as {name}:")
        self.body(body, ind + 1, var)
        return None

    # -- statements ------------------------------------------------------------------------------
    def s_SeqStmt(self, s: SeqStmt, ind: int, last: bool) -> None:
        self.block(s, ind)

    def s_Evaluate(self, s: Evaluate, ind: int, last: bool) -> None:
        v = s.value
        is_ret = isinstance(v, Call) and getattr(v.op, "name", "") == "tir.ret"
        if is_ret and len(v.args) == 1 and v.args[0].dtype == v.dtype:
            self.emit(ind, f"return {self.expr(v.args[0], self.ret_dtype)}")
        elif isinstance(v, Call):
            self.emit(ind, self.expr(v))
        else:
            self.emit(ind, f"T.evaluate({self.expr(v)})")

    def s_BufferStore(self, s: BufferStore, ind: int, last: bool) -> None:
        buf = self.buffer_name(s.buffer)
        idx = [self.expr(i) for i in s.indices]
        lanes = s.indices[-1].dtype.lanes if s.indices else 1
        value = self.expr(s.value, s.buffer.dtype.with_lanes(lanes))
        self.emit(ind, f"{buf}[{', '.join(idx) if idx else '()'}] = {value}")

    def s_LetStmt(self, s: LetStmt, ind: int, last: bool) -> Stmt | None:
        value = self.expr(s.value, s.var.dtype)
        name = self.define(s.var)
        if last:
            self.emit(ind, f"{name}: {self.type_text(s.var)} = {value}")
            self.defined(s.var, ind)
            return s.body
        self.pre.append(f"{name} = {self.var_ctor(s.var)}")
        self.emit(ind, f"with T.LetStmt({value}, var={name}):")
        self.body(s.body, ind + 1, s.var)
        return None

    def s_AssertStmt(self, s: AssertStmt, ind: int, last: bool) -> Stmt | None:
        cond, msg = self.expr(s.condition, STRICT), self.expr(s.message)
        if last:
            self.emit(ind, f"assert {cond}, {msg}")
            return s.body
        self.emit(ind, f"with T.Assert({cond}, {msg}):")
        self.body(s.body, ind + 1)
        return None

    def s_AttrStmt(self, s: AttrStmt, ind: int, last: bool) -> Stmt | None:
        node, value = s.node, self.expr(s.value)
        if isinstance(node, IterVar) and node.iter_type is IterKind.THREAD_INDEX:
            tag = node.thread_tag
            if s.attr_key == thread_attr_key(tag) and self.launch_form(node, s.value):
                if last:
                    name = self.define(node.var)
                    self.emit(ind, f"{name} = T.launch_thread({quote(tag)}, {value})")
                    self.defined(node.var, ind)
                    return s.body
                name = self.env_var(node)
                self.emit(ind, f"with T.launch_thread({name}, {value}):")
                self.body(s.body, ind + 1, node.var)
                return None
            if node.dom is None:
                name = self.env_var(node)
                self.emit(ind, f"with T.attr({name}, {quote(s.attr_key)}, {value}):")
                self.body(s.body, ind + 1, node.var)
                return None
        target = self.iter_var_text(node) if isinstance(node, IterVar) else self.expr(node)
        self.emit(ind, f"with T.attr({target}, {quote(s.attr_key)}, {value}):")
        self.body(s.body, ind + 1)
        return None

    def launch_form(self, iv: IterVar, value: PrimExpr) -> bool:
        dom = iv.dom
        return (
            dom is not None
            and _is_zero(dom.min, value.dtype)
            and iv.var.dtype == value.dtype
            and structural_equal(dom.extent, value)
        )

    def env_var(self, iv: IterVar) -> str:
        name = self.define(iv.var)
        dtype = "" if str(iv.var.dtype) == "int32" else f", dtype={quote(str(iv.var.dtype))}"
        self.pre.append(f"{name} = T.env_thread({quote(iv.thread_tag)}{dtype})")
        return name

    def iter_var_text(self, iv: IterVar) -> str:
        name = self.define(iv.var)
        self.pre.append(f"{name} = {self.var_ctor(iv.var)}")
        dom = "None"
        if iv.dom is not None:
            dom = f"T.Range({self.range_text(iv.dom.min, iv.dom.extent)})"
        kind = quote(ITER_KIND_NAMES[iv.iter_type])
        return f"T.iter_var({name}, {dom}, {kind}, {quote(iv.thread_tag)})"

    def s_For(self, s: For, ind: int, last: bool) -> None:
        chain = self.grid_chain(s)
        if len(chain) > 1:
            extents = ", ".join(self.expr(f.extent) for f in chain)
            names = ", ".join(self.define(f.loop_var) for f in chain)
            self.emit(ind, f"for {names} in T.grid({extents}):")
            self.body(chain[-1].body, ind + 1)
            return None
        args = self.loop_args(s)
        func = _LOOP_FUNCS[s.kind]
        if s.kind is ForKind.THREAD_BINDING:
            tag = s.thread_binding.thread_tag if s.thread_binding is not None else ""
            args += f", thread={quote(tag)}"
        elif s.kind is ForKind.SERIAL and not s.annotations:
            func = "range"
        if s.annotations:
            args += f", annotations={self.attr_value(s.annotations)}"
        name = self.define(s.loop_var)
        self.emit(ind, f"for {name} in {func}({args}):")
        self.body(s.body, ind + 1, s.loop_var)
        return None

    def loop_args(self, s: For) -> str:
        if _is_zero(s.min, s.loop_var.dtype):
            return self.expr(s.extent)
        return self.range_text(s.min, s.extent)

    def range_text(self, lo: PrimExpr, ext: PrimExpr) -> str:
        """``start, stop`` that the parser reads back as exactly (``lo``, ``ext``)."""
        if isinstance(lo, IntImm) and isinstance(ext, IntImm) and lo.dtype == ext.dtype:
            return f"{self.expr(lo)}, {self.expr(IntImm(lo.dtype, lo.value + ext.value))}"
        stop: PrimExpr = Add(lo, ext)
        if isinstance(ext, Sub) and structural_equal(ext.b, lo):
            x = ext.a
            if not (isinstance(x, Add) and structural_equal(x.a, lo)):
                stop = x
        return f"{self.expr(lo)}, {self.expr(stop)}"

    def grid_chain(self, s: For) -> list[For]:
        chain: list[For] = []
        outer: set[int] = set()
        cur: Any = s
        while self.plain_loop(cur) and not (scan(cur.extent, set()).used.keys() & outer):
            chain.append(cur)
            outer.add(id(cur.loop_var))
            cur = cur.body
        return chain

    def plain_loop(self, s: Any) -> bool:
        return (
            isinstance(s, For)
            and s.kind is ForKind.SERIAL
            and not s.annotations
            and _is_zero(s.min, s.loop_var.dtype)
        )

    def s_While(self, s: While, ind: int, last: bool) -> None:
        self.emit(ind, f"while {self.expr(s.condition, STRICT)}:")
        self.body(s.body, ind + 1)

    def s_IfThenElse(self, s: IfThenElse, ind: int, last: bool) -> None:
        self.emit(ind, f"if {self.expr(s.condition, STRICT)}:")
        self.body(s.then_case, ind + 1)
        other = s.else_case
        while isinstance(other, IfThenElse):
            cond = self.expr(other.condition, STRICT)
            if self.pre:  # declarations cannot sit between a block and its `elif`
                self.lines.append("    " * ind + "else:")
                self.emit(ind + 1, f"if {cond}:")
                self.body(other.then_case, ind + 2)
                if other.else_case is not None:
                    self.emit(ind + 1, "else:")
                    self.body(other.else_case, ind + 2)
                return
            self.emit(ind, f"elif {cond}:")
            self.body(other.then_case, ind + 1)
            other = other.else_case
        if other is not None:
            self.emit(ind, "else:")
            self.body(other, ind + 1)

    def s_Allocate(self, s: Allocate, ind: int, last: bool) -> Stmt | None:
        decl = s.body
        if isinstance(decl, DeclBuffer) and self.is_alloc_buffer(s, decl.buffer):
            buf = decl.buffer
            text = f"T.alloc_buffer({self.buffer_args(buf, 'alloc')})"
            name = self.define(buf)
            self.names[id(buf.data)] = f"{name}.data"
            return self.scoped(ind, last, name, text, decl.body, buf.data)
        ty = s.buffer_var.type_annotation
        scope = ty.scope if isinstance(ty, PointerType) else "global"
        parts = [f"[{', '.join(self.expr(e) for e in s.extents)}]", quote(str(s.dtype))]
        parts.append(quote(scope))
        if not (isinstance(s.condition, IntImm) and s.condition.value == 1):
            parts.append(f"condition={self.expr(s.condition, STRICT)}")
        if s.annotations:
            parts.append(f"annotations={self.attr_value(s.annotations)}")
        text = f"T.allocate({', '.join(parts)})"
        name = self.define(s.buffer_var)
        return self.scoped(ind, last, name, text, s.body, s.buffer_var)

    def is_alloc_buffer(self, s: Allocate, buf: Buffer) -> bool:
        cond = s.condition
        return (
            buf.data is s.buffer_var
            and buf.dtype == s.dtype
            and isinstance(cond, IntImm)
            and cond.value == 1
            and not s.annotations
            and s.buffer_var.type_annotation == PointerType(PrimType(buf.dtype), _scope(buf))
            and structural_equal(tuple(s.extents), tuple(buf.shape))
        )

    def s_DeclBuffer(self, s: DeclBuffer, ind: int, last: bool) -> Stmt | None:
        buf = s.buffer
        data = self.expr(buf.data)
        text = f"T.decl_buffer({self.buffer_args(buf, 'decl', data)})"
        name = self.define(buf)
        return self.scoped(ind, last, name, text, s.body, None)

    # -- functions and modules -------------------------------------------------------------------
    def func(self, f: PrimFunc, name: str, ind: int = 0) -> None:
        self.reset_names()
        self.ret_dtype = f.ret_type.dtype if isinstance(f.ret_type, PrimType) else None
        declared = {id(b) for b in f.buffer_map.values()}
        info = scan(f.body, declared)
        self.views = info.views
        deco = "@T.prim_func" if f.global_symbol is not None else "@T.prim_func(private=True)"
        self.emit(ind, deco)
        annotated = self.annotated_params(f, info)
        params = [self.param_text(p, f.buffer_map.get(p), id(p) in annotated) for p in f.params]
        self.emit(ind, f"def {name}({', '.join(params)}){self.ret_text(f.ret_type)}:")
        start = len(self.lines)
        attrs = dict(f.attrs)
        if list(attrs)[:1] == ["global_symbol"] and attrs["global_symbol"] == name:
            del attrs["global_symbol"]
        if attrs:
            self.emit(ind + 1, f"T.func_attr({self.attr_value(attrs)})")
        for p, buf in f.buffer_map.items():
            if id(p) not in annotated:
                self.match_buffer(p, buf, ind + 1)
        for p in f.params:
            buf = f.buffer_map.get(p)
            self.defined(buf.data if buf is not None else p, ind + 1)
        self.declare_free(info, ind + 1)
        self.block(f.body, ind + 1)
        if len(self.lines) == start:
            self.emit(ind + 1, "T.evaluate(0)")

    def declare_free(self, info: Scan, ind: int) -> None:
        """Declare variables nothing defines, then the views on pointers nothing defines."""
        for key, var in info.used.items():
            if key not in info.defined and key not in self.names:
                self.emit(ind, f"{self.define(var)} = {self.var_ctor(var)}")
        for key in list(self.views):
            if key not in info.defined and key in self.views:
                self.defined(self.views[key][0].data, ind)

    def annotated_params(self, f: PrimFunc, info: Scan) -> set[int]:
        """Buffer parameters printable as ``A: T.Buffer(...)`` (in param order, a map prefix)."""
        out: set[int] = set()
        order = {id(p): i for i, p in enumerate(f.params)}
        last = -1
        for p, buf in f.buffer_map.items():
            ok = (
                order.get(id(p), -1) > last
                and p.type_annotation == PrimType("handle")
                and id(p) not in info.used
                and not scan((buf.shape, buf.strides, buf.elem_offset), set()).used
                and self.default_data(buf)
            )
            if not ok:
                break
            out.add(id(p))
            last = order[id(p)]
        return out

    def default_data(self, buf: Buffer) -> bool:
        """Whether a buffer construct without ``data=`` makes exactly ``buf.data``."""
        data = buf.data
        ty = PointerType(PrimType(buf.dtype), _scope(buf))
        return id(data) not in self.names and data.type_annotation == ty and type(data) is Var

    def param_text(self, p: Var, buf: Buffer | None, annotated: bool) -> str:
        if annotated and buf is not None:
            name = self.define(buf)
            self.names[id(p)] = name
            self.names[id(buf.data)] = f"{name}.data"
            return f"{name}: T.Buffer({self.buffer_args(buf, 'param')})"
        name = self.define(p)
        return f"{name}: {self.type_text(p)}"

    def match_buffer(self, p: Var, buf: Buffer, ind: int) -> None:
        owned = self.default_data(buf)
        data = None if owned else self.expr(buf.data)
        args = self.buffer_args(buf, "match", data)
        name = self.define(buf)
        if owned:
            self.names[id(buf.data)] = f"{name}.data"
        self.emit(ind, f"{name} = T.match_buffer({self.names[id(p)]}, {args})")

    def module(self, mod: IRModule) -> None:
        funcs = list(mod.items())
        relax = any(not isinstance(f, PrimFunc) and type(f) in FUNC_PRINTERS for _, f in funcs)
        self.lines += [
            RELAX_HEADER if relax else HEADER,
            "",
            "@I.ir_module",
            f"class {self.module_name}:",
        ]
        if mod.attrs:
            self.emit(1, f"I.module_attrs({self.attr_value(dict(mod.attrs))})")
        first = True
        for gv, f in funcs:
            if not first or mod.attrs:
                self.lines.append("")
            first = False
            printer = FUNC_PRINTERS.get(type(f))
            if printer is None:
                self.emit(1, f"# {gv.name_hint}: a {type(f).__name__} (no script printer)")
            else:
                printer(self, f, gv.name_hint)


def _print_prim_func(p: Printer, f: Any, name: str) -> None:
    p.func(f, name, 1)


def _print_relax_function(p: Printer, f: Any, name: str) -> None:
    rp = RelaxPrinter(p.module_name, p.meta)
    rp.func(f, name, 1)
    p.lines.extend(rp.lines)


FUNC_PRINTERS: dict[type, Any] = {PrimFunc: _print_prim_func, Function: _print_relax_function}
"""The printer of each function class a module may hold (chosen per node class)."""


def _scope(buf: Buffer) -> str:
    ty = buf.data.type_annotation
    return ty.storage_scope if isinstance(ty, PointerType) else ""


def script(
    node: Any,
    marks: dict[int, str] | None = None,
    show_meta: bool = False,
    metadata: dict | None = None,
    **kwargs: Any,
) -> str:
    """``node`` as script text: a module, a function, statements, an expression, a buffer, or a
    graph-level function, expression or struct info. ``marks`` (id of a statement -> note) puts
    ``# <-- note`` after the first line of each such statement.

    Large constants print as ``metadata["relax.Constant"][i]`` references unless ``show_meta``;
    a dict passed as ``metadata`` receives them (`kiln.script.metadata`).
    """
    meta = None if show_meta else MetadataWriter()
    text = _script(node, marks, meta)
    if meta is not None and meta.count:
        if metadata is not None:
            meta.fill(metadata)
        if text.endswith("\n"):
            text += meta.footer() + "\n"
    return text


def _script(node: Any, marks: dict[int, str] | None, meta: MetadataWriter | None) -> str:
    p = Printer(meta=meta)
    p.marks = dict(marks or {})
    if isinstance(node, IRModule):
        p.module(node)
    elif isinstance(node, PrimFunc):
        sym = node.global_symbol
        name = sym if isinstance(sym, str) and _IDENT.match(sym) else "main"
        p.lines += [HEADER, ""]
        p.func(node, name)
    elif isinstance(node, Stmt):
        info = scan(node, set())
        p.views = info.views
        p.declare_free(info, 0)
        p.block(node, 0)
    elif isinstance(node, (PrimExpr, Buffer)):
        # NOTE: a lone expression is not a module: only T's name is taken (a buffer called I
        # prints as I in error messages)
        p.used = ScriptNameSupply([*EXPR_RESERVED])
        return p.expr(node)
    elif (text := print_relax(node, meta)) is not None:
        return text
    elif isinstance(node, GlobalVar):
        return f"I.GlobalVar({quote(node.name_hint)})"
    else:
        return repr(node)
    return "\n".join(p.lines) + "\n"
