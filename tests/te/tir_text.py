"""A compact, C-like text form of TIR for test assertions and failure messages.

Not the script printer (kiln.script owns that): just enough to read a lowered loop nest.
"""

from __future__ import annotations

from typing import Any

from kiln import tir

_OPS = {
    tir.Add: "+",
    tir.Sub: "-",
    tir.Mul: "*",
    tir.Div: "/",
    tir.Mod: "%t",
    tir.FloorDiv: "//",
    tir.FloorMod: "%",
    tir.EQ: "==",
    tir.NE: "!=",
    tir.LT: "<",
    tir.LE: "<=",
    tir.GT: ">",
    tir.GE: ">=",
    tir.And: "and",
    tir.Or: "or",
}


def expr(e: Any) -> str:
    if isinstance(e, tir.IntImm):
        return str(bool(e.value)) if e.dtype.is_bool else str(e.value)
    if isinstance(e, tir.FloatImm):
        return repr(e.value)
    if isinstance(e, tir.Var):
        return e.name
    if isinstance(e, (tir.Min, tir.Max)):
        return f"{type(e).__name__.lower()}({expr(e.a)}, {expr(e.b)})"
    if isinstance(e, tir.BinaryOp):
        return f"({expr(e.a)} {_OPS[type(e)]} {expr(e.b)})"
    if isinstance(e, tir.BufferLoad):
        return f"{e.buffer.name}[{', '.join(expr(i) for i in e.indices)}]"
    if isinstance(e, tir.Call):
        return f"{e.op_name}({', '.join(expr(a) for a in e.args)})"
    if isinstance(e, tir.Cast):
        return f"{e.dtype}({expr(e.value)})"
    if isinstance(e, tir.Not):
        return f"not {expr(e.a)}"
    if isinstance(e, tir.Select):
        return f"select({expr(e.condition)}, {expr(e.true_value)}, {expr(e.false_value)})"
    return type(e).__name__


def stmt(s: Any, indent: int = 0) -> str:
    pad = "  " * indent
    if isinstance(s, tir.SeqStmt):
        return "".join(stmt(x, indent) for x in s.seq)
    if isinstance(s, tir.For):
        kind = s.kind.value
        tag = f" {s.thread_binding.thread_tag}" if s.thread_binding is not None else ""
        ann = f" {dict(s.annotations)}" if s.annotations else ""
        head = f"{pad}for {s.loop_var.name} in {expr(s.extent)} {kind}{tag}{ann}:\n"
        return head + stmt(s.body, indent + 1)
    if isinstance(s, tir.BufferStore):
        idx = ", ".join(expr(i) for i in s.indices)
        return f"{pad}{s.buffer.name}[{idx}] = {expr(s.value)}\n"
    if isinstance(s, tir.IfThenElse):
        out = f"{pad}if {expr(s.condition)}:\n" + stmt(s.then_case, indent + 1)
        if s.else_case is not None:
            out += f"{pad}else:\n" + stmt(s.else_case, indent + 1)
        return out
    if isinstance(s, tir.Allocate):
        ext = ", ".join(expr(e) for e in s.extents)
        scope = s.buffer_var.type_annotation.scope
        return f"{pad}alloc {s.buffer_var.name}[{ext}] {s.dtype} {scope}\n" + stmt(s.body, indent)
    if isinstance(s, tir.DeclBuffer):
        return stmt(s.body, indent)
    return f"{pad}{type(s).__name__}\n"


def show(func: tir.PrimFunc) -> str:
    """The function's body as indented text."""
    return stmt(func.body)


def loops(func: tir.PrimFunc) -> list[tir.For]:
    """Every `For` of the function, outermost first (pre-order)."""
    return [n for n in tir.pre_order_nodes(func.body) if isinstance(n, tir.For)]


def loop_summary(func: tir.PrimFunc) -> list[tuple[str, Any, str]]:
    """(name, extent, kind) of each loop in pre-order; constant extents as ints."""
    out = []
    for f in loops(func):
        ext = f.extent.value if isinstance(f.extent, tir.IntImm) else expr(f.extent)
        out.append((f.loop_var.name, ext, f.kind.value))
    return out
