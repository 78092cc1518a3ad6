"""Printing of TIR expressions, literals, types and names as script text.

Literals print bare only where the parser turns the Python number back into the same immediate:
an ``int32`` anywhere, an ``int64`` or ``float32`` next to an expression of that dtype
(``i + 1``, ``A[0] = 42.0``); everywhere else they carry their type (``T.int64(0)``,
``T.float32(1.0)``). Variables get unique names per function (``i``, ``i_1``...); a variable
first met where nothing defines it gets a declaration line (``n = T.int32()``) before the
statement that uses it.
"""

from __future__ import annotations

import json
import keyword
import math
import re
from typing import Any

from kiln.ir.deep import DeepWalker, stack_safe
from kiln.ir.dtype import DataType
from kiln.ir.function import GlobalVar
from kiln.ir.names import NameSupply
from kiln.ir.node import Node
from kiln.ir.op import Op
from kiln.script.tir_ns.intrin import INTRIN_RULES, rule_dtype
from kiln.tir.buffer import Buffer
from kiln.tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Select,
    SizeVar,
    StringImm,
    Sub,
    Var,
)
from kiln.tir.type import PointerType, PrimType, TupleType

OR, AND, NOT, CMP, ADD, MUL, UNARY, ATOM = 1, 2, 3, 4, 9, 10, 11, 13
STRICT = "strict"  # context where every literal must carry its type
INT32 = DataType("int", 32)
HANDLE = DataType("handle", 64)
_BINOPS: dict[type, tuple[str, int]] = {
    Add: ("+", ADD),
    Sub: ("-", ADD),
    Mul: ("*", MUL),
    Div: ("/", MUL),
    FloorDiv: ("//", MUL),
    FloorMod: ("%", MUL),
    EQ: ("==", CMP),
    NE: ("!=", CMP),
    LT: ("<", CMP),
    LE: ("<=", CMP),
    GT: (">", CMP),
    GE: (">=", CMP),
    And: ("and", AND),
    Or: ("or", OR),
}
_BINFUNCS: dict[type, str] = {Mod: "T.truncmod", Min: "T.min", Max: "T.max"}
EXPR_RESERVED = frozenset(keyword.kwlist) | {"T"}
RESERVED = EXPR_RESERVED | {"I", "range"}


class ScriptNameSupply(NameSupply):
    """Unique Python identifiers for printed variables, buffers and functions."""

    def clean(self, hint: str) -> str:
        base = re.sub(r"\W", "_", hint or "v")
        return f"v_{base}" if not base or base[0].isdigit() else base


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def quote(text: str) -> str:
    """A Python string literal for ``text``."""
    return json.dumps(text)


def is_imm(e: Any) -> bool:
    return isinstance(e, (IntImm, FloatImm))


def dtype_ctor(dt: DataType) -> str | None:
    """``T.float32`` for a dtype whose name is a T attribute, else None."""
    name = str(dt)
    return f"T.{name}" if _IDENT.match(name) and not dt.is_handle and not dt.is_void else None


class ExprPrinter(DeepWalker):
    """Expression half of the printer; holds the naming state of one function."""

    def __init__(self, module_name: str = "Module") -> None:
        self.module_name = module_name
        self.reset_names()

    def reset_names(self) -> None:
        self.names: dict[int, str] = {}
        self.keep: list[Any] = []  # keeps named nodes alive so their ids stay unique
        self.used = ScriptNameSupply([*RESERVED, self.module_name])
        self.pre: list[str] = []

    # -- names -----------------------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        return self.used.fresh(hint)

    def define(self, node: Any, hint: str | None = None) -> str:
        """Name ``node`` (a Var or Buffer) at its definition."""
        name = self.fresh(hint if hint is not None else getattr(node, "name", "v"))
        self.names[id(node)] = name
        self.keep.append(node)
        return name

    def var_ctor(self, v: Var) -> str:
        """The expression that makes a fresh variable like ``v`` (``T.int32()``...)."""
        ty = v.type_annotation
        if isinstance(ty, PointerType):
            return f"T.handle({self.pointer_args(ty)})"
        if v.dtype == HANDLE:
            return "T.handle()"
        ctor = dtype_ctor(v.dtype) or "T.int32"
        return f"{ctor}(is_size_var=True)" if isinstance(v, SizeVar) else f"{ctor}()"

    def pointer_args(self, ty: PointerType) -> str:
        elem = ty.element_type
        dt = str(elem.dtype) if isinstance(elem, PrimType) else "handle"
        scope = ty.storage_scope
        return f"{quote(dt)}, {quote(scope)}" if scope and scope != "global" else quote(dt)

    def type_text(self, v: Var) -> str:
        """The annotation that declares a variable like ``v`` (``T.int32``...)."""
        ty = v.type_annotation
        if isinstance(ty, PointerType):
            return f"T.handle({self.pointer_args(ty)})"
        if v.dtype == HANDLE:
            return "T.handle"
        ctor = dtype_ctor(v.dtype) or "T.int32"
        return f"{ctor}(is_size_var=True)" if isinstance(v, SizeVar) else ctor

    def ret_text(self, ty: Any) -> str:
        if isinstance(ty, TupleType):
            return ""
        if isinstance(ty, PointerType):
            return f" -> T.handle({self.pointer_args(ty)})"
        if isinstance(ty, PrimType):
            return " -> " + (
                "T.handle" if ty.dtype == HANDLE else dtype_ctor(ty.dtype) or "T.int32"
            )
        return ""

    def var_name(self, v: Var) -> str:
        name = self.names.get(id(v))
        if name is None:  # used where nothing defines it: declare it before this statement
            name = self.define(v)
            self.pre.append(f"{name} = {self.var_ctor(v)}")
        return name

    def buffer_name(self, b: Buffer) -> str:
        name = self.names.get(id(b))
        if name is None:  # a buffer nothing declares: a view declared before this statement
            data = self.expr(b.data)
            name = self.define(b)
            self.pre.append(f"{name} = T.Buffer({self.buffer_args(b, 'view', data)})")
        return name

    def buffer_args(self, b: Buffer, kind: str, data: str | None = None) -> str:
        """Arguments of T.Buffer / T.decl_buffer / ...; ``data`` is printed when given."""
        parts = [self.shape_text(b.shape), quote(str(b.dtype))]
        if data is not None:
            parts.append(f"data={data}")
        if b.strides:
            parts.append(f"strides={self.shape_text(b.strides)}")
        if b.elem_offset is not None:
            parts.append(f"elem_offset={self.expr(b.elem_offset)}")
        if data is None and b.scope != "global":
            parts.append(f"scope={quote(b.scope)}")
        if b.data_alignment != 64:
            parts.append(f"align={b.data_alignment}")
        if b.offset_factor != 1:
            parts.append(f"offset_factor={b.offset_factor}")
        if b.axis_separators:
            parts.append(f"axis_separators={list(b.axis_separators)}")
        return ", ".join(parts)

    def shape_text(self, dims: tuple) -> str:
        items = [self.expr(d) for d in dims]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"

    # -- expressions -----------------------------------------------------------------------------
    def expr(self, e: Any, ctx: Any = None) -> str:
        return self.pexpr(e, ctx)[0]

    @stack_safe
    def pexpr(self, e: Any, ctx: Any = None) -> tuple[str, int]:
        """(text, precedence) of ``e``; ``ctx`` is the dtype a bare Python number would take."""
        if isinstance(e, Var):
            return self.var_name(e), ATOM
        if isinstance(e, IntImm):
            return self.int_lit(e, ctx)
        if isinstance(e, FloatImm):
            return self.float_lit(e, ctx)
        if isinstance(e, BinaryOp):
            return self.binary(e)
        if isinstance(e, Not):
            return self.p_Not(e), NOT
        method = getattr(self, f"p_{type(e).__name__}", None)
        if method is not None:
            return method(e), ATOM
        if isinstance(e, Buffer):
            return self.buffer_name(e), ATOM
        if isinstance(e, (str, bool, int, float)) or e is None:
            return self.attr_value(e), ATOM
        return f"<{type(e).__name__}>", ATOM

    def int_lit(self, e: IntImm, ctx: Any) -> tuple[str, int]:
        dt, v = e.dtype, e.value
        if dt.is_bool:
            if ctx is None or ctx == dt:
                return ("True" if v else "False"), ATOM
            return f"T.bool({bool(v)})", ATOM
        wide = dt == DataType("int", 64) and not -(2**31) <= v < 2**31
        bare = (ctx is None and (dt == INT32 or wide)) or (
            isinstance(ctx, DataType) and ctx == dt and dt.is_integer
        )
        if bare:
            return str(v), UNARY if v < 0 else ATOM
        ctor = dtype_ctor(dt)
        return (f"{ctor}({v})" if ctor else f"T.IntImm({quote(str(dt))}, {v})"), ATOM

    def float_lit(self, e: FloatImm, ctx: Any) -> tuple[str, int]:
        v = e.value
        if math.isfinite(v) and isinstance(ctx, DataType) and ctx == e.dtype:
            text = repr(v)
            return text, UNARY if text.startswith("-") else ATOM
        arg = repr(v) if math.isfinite(v) else quote(repr(v))
        ctor = dtype_ctor(e.dtype)
        return (f"{ctor}({arg})" if ctor else f"T.FloatImm({quote(str(e.dtype))}, {arg})"), ATOM

    def binary(self, e: BinaryOp) -> tuple[str, int]:
        a, b = e.a, e.b
        strict = isinstance(e, (And, Or))  # Python would short-circuit on bare literals
        if strict:
            ca, cb = STRICT, STRICT
        elif is_imm(a) and is_imm(b):
            ca, cb = STRICT, a.dtype
        else:
            ca, cb = b.dtype, a.dtype
        fn = _BINFUNCS.get(type(e))
        if isinstance(e, Div) and not e.dtype.is_float:
            fn = "T.truncdiv"  # `/` reads back as Div too; this name says what it does
        if fn is not None or type(e) not in _BINOPS:
            name = fn or f"T.{type(e).__name__}"
            return f"{name}({self.expr(a, ca)}, {self.expr(b, cb)})", ATOM
        op, prec = _BINOPS[type(e)]
        ta, pa = self.pexpr(a, ca)
        tb, pb = self.pexpr(b, cb)
        if pa < prec or (prec == CMP and pa == CMP):
            ta = f"({ta})"
        if pb <= prec:
            tb = f"({tb})"
        return f"{ta} {op} {tb}", prec

    def p_Not(self, e: Not) -> str:
        text, prec = self.pexpr(e.a, STRICT)
        return f"not ({text})" if prec < NOT else f"not {text}"

    def p_StringImm(self, e: StringImm) -> str:
        return quote(e.value)

    def p_Cast(self, e: Cast) -> str:
        return f"T.Cast({quote(str(e.dtype))}, {self.expr(e.value)})"

    def p_Select(self, e: Select) -> str:
        parts = (self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value))
        return f"T.Select({', '.join(parts)})"

    def p_Ramp(self, e: Ramp) -> str:
        return f"T.Ramp({self.expr(e.base)}, {self.expr(e.stride, e.base.dtype)}, {e.lanes})"

    def p_Broadcast(self, e: Broadcast) -> str:
        return f"T.Broadcast({self.expr(e.value)}, {e.lanes})"

    def p_Let(self, e: Let) -> str:
        value = self.expr(e.value, e.var.dtype)
        name = self.define(e.var)
        self.pre.append(f"{name} = {self.var_ctor(e.var)}")
        return f"T.Let({self.expr(e.body)}, where={{{name}: {value}}})"

    def p_BufferLoad(self, e: BufferLoad) -> str:
        buf = self.buffer_name(e.buffer)
        idx = [self.expr(i) for i in e.indices]
        lanes = e.indices[-1].dtype.lanes if e.indices else 1
        if e.dtype != e.buffer.dtype.with_lanes(e.buffer.dtype.lanes * lanes):
            tup = f"({idx[0]},)" if len(idx) == 1 else f"({', '.join(idx)})"
            return f"{buf}.vload({tup}, {quote(str(e.dtype))})"
        return f"{buf}[{', '.join(idx) if idx else '()'}]"

    def p_Call(self, e: Call) -> str:
        op, args = e.op, e.args
        if isinstance(op, GlobalVar):
            return f"{self.module_name}.{op.name_hint}({self.args_text(args, None)})"
        short = op.name[4:] if op.name.startswith("tir.") else ""
        rule = INTRIN_RULES.get(short)
        nargs = op.get_attr("num_args", -1)
        if rule is not None and (nargs < 0 or nargs == len(args)):
            if rule == "dtype_first":
                return f"T.{short}({quote(str(e.dtype))}{self.args_text(args, None, lead=True)})"
            if rule == "dtype_last":
                return f"T.{short}({self.args_text(args, None)}, {quote(str(e.dtype))})"
            if rule_dtype(rule, args) == e.dtype:
                ctx = self.arg_ctx(args) if rule.startswith("arg") else None
                return f"T.{short}({self.args_text(args, ctx)})"
        name = quote(op.name if isinstance(op, Op) else str(op))
        return f"T.call_intrin({quote(str(e.dtype))}, {name}{self.args_text(args, None, True)})"

    def arg_ctx(self, args: tuple) -> Any:
        """The dtype Python numbers among ``args`` take (that of the first non-literal)."""
        first = next((a for a in args if isinstance(a, PrimExpr) and not is_imm(a)), None)
        return first.dtype if first is not None else None

    def args_text(self, args: tuple, ctx: Any, lead: bool = False) -> str:
        text = ", ".join(self.expr(a, ctx) for a in args)
        return f", {text}" if lead and text else text

    # -- attribute values ----------------------------------------------------------------------
    def attr_value(self, v: Any) -> str:
        """A Python literal for an attribute value (dicts, lists, numbers, strings, IR)."""
        if isinstance(v, bool) or v is None:
            return repr(v)
        if isinstance(v, int):
            return str(v)
        if isinstance(v, float):
            return repr(v) if math.isfinite(v) else f"float({quote(repr(v))})"
        if isinstance(v, str):
            return quote(v)
        if isinstance(v, (list, tuple)):
            items = [self.attr_value(x) for x in v]
            if isinstance(v, list):
                return f"[{', '.join(items)}]"
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        if hasattr(v, "items"):
            kv = [f"{self.attr_value(k)}: {self.attr_value(x)}" for k, x in v.items()]
            return f"{{{', '.join(kv)}}}"
        if isinstance(v, PrimExpr):
            return self.expr(v, STRICT)
        if isinstance(v, GlobalVar):
            return f"I.GlobalVar({quote(v.name_hint)})"
        if isinstance(v, Node):
            return self.expr(v)
        return repr(v)
