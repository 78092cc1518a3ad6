"""Printing of graph-level (relax) functions, expressions and struct info as ``R`` script.

A function prints as TVM does: parameter annotations name each symbolic variable as a string at
its first bare use (``R.Tensor(("n", 4), dtype="float32")``), the body starts with one
``n = T.int64()`` per symbolic variable of the function, ``cls = Module`` when it refers to
module functions (``cls.f``), then the bindings, each annotated with its variable's struct info
(``lv: R.Tensor((n, 4), dtype="float32") = R.add(x, y)``); a dataflow block ends with
``R.output(...)``, an `If` prints as an ``if``/``else`` whose branches end by assigning the
bound name, a local function as a nested ``@R.function``. Operator calls print under their TVM
names with the attributes that differ from the builder's defaults as keywords. A constant of
more than a few elements prints as a reference into the metadata section unless the caller asks
for it inline (`kiln.script.metadata`). The text parses back to a structurally equal function.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

from kiln.ir.deep import stack_safe
from kiln.ir.dtype import DataType
from kiln.ir.function import GlobalVar
from kiln.ir.op import Op
from kiln.relax.analysis.struct_info import tir_vars
from kiln.relax.binding import Binding, DataflowBlock, MatchCast
from kiln.relax.expr import (
    Call,
    Constant,
    DataTypeImm,
    Expr,
    ExternFunc,
    Function,
    If,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
)
from kiln.relax.op.registry import find_op_def
from kiln.relax.struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from kiln.script.metadata import NAME as METADATA_NAME
from kiln.script.metadata import RELAX_CONSTANT, MetadataWriter, dtype_name
from kiln.script.printer_expr import RESERVED, STRICT, ExprPrinter, ScriptNameSupply, quote
from kiln.tir.expr import IntImm
from kiln.tir.expr import Var as TirVar

INT64 = DataType("int", 64)
HEADER = "# from kiln.script import ir as I, relax as R, tir as T"
_SPECIAL = {
    "relax.call_tir",
    "relax.call_dps_packed",
    "relax.call_pure_packed",
    "relax.call_lowered",
}


class RelaxPrinter(ExprPrinter):
    """Prints relax functions into ``lines`` (see the module docstring)."""

    def __init__(self, module_name: str = "Module", meta: MetadataWriter | None = None) -> None:
        super().__init__(module_name)
        self.lines: list[str] = []
        self.uses_cls = False
        self.meta = meta
        """Collects the large constants printed as metadata references (None: all inline)."""

    def reset_names(self) -> None:
        super().reset_names()
        reserved = [*RESERVED, "R", "cls", "float", METADATA_NAME, self.module_name]
        self.used = ScriptNameSupply(reserved)

    def emit(self, ind: int, text: str) -> None:
        self.lines.append("    " * ind + text)

    # -- struct info -----------------------------------------------------------------------------
    def dim(self, d: Any, quoted: set[int] | None = None) -> str:
        if quoted is not None and isinstance(d, TirVar) and id(d) in quoted:
            quoted.discard(id(d))
            return quote(self.names[id(d)])
        return self.expr(d, INT64)

    def dims(self, values: Any, quoted: set[int] | None = None) -> str:
        items = [self.dim(d, quoted) for d in values]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"

    def sinfo(self, s: StructInfo, quoted: set[int] | None = None) -> str:
        """``s`` as an annotation; symbolic vars in ``quoted`` print once as strings."""
        if isinstance(s, ObjectStructInfo):
            return "R.Object"
        if isinstance(s, TensorStructInfo):
            parts = []
            if isinstance(s.shape, ShapeExpr):
                parts.append(self.dims(s.shape.values, quoted))
            elif s.shape is not None:
                parts.append(self.value(s.shape))
            if not s.dtype.is_void:
                parts.append(f"dtype={quote(str(s.dtype))}")
            if s.shape is None and s.ndim != -1:
                parts.append(f"ndim={s.ndim}")
            return f"R.Tensor({', '.join(parts)})" if parts else "R.Tensor"
        if isinstance(s, ShapeStructInfo):
            if s.values is not None:
                return f"R.Shape([{', '.join(self.dim(d, quoted) for d in s.values)}])"
            return f"R.Shape(ndim={s.ndim})" if s.ndim != -1 else "R.Shape"
        if isinstance(s, PrimStructInfo):
            if s.value is not None:
                text = self.dim(s.value, quoted) if s.value.dtype == INT64 else self.prim(s.value)
                return f"R.Prim(value={text})"
            return f"R.Prim({quote(str(s.dtype))})"
        if isinstance(s, TupleStructInfo):
            return f"R.Tuple({', '.join(self.sinfo(f, quoted) for f in s.fields)})"
        if isinstance(s, FuncStructInfo):
            ret = self.sinfo(s.ret, quoted)
            if s.params is None:
                return f"R.Callable(ret={ret}, purity={s.purity})"
            params = ", ".join(self.sinfo(p, quoted) for p in s.params)
            params = f"({params},)" if len(s.params) == 1 else f"({params})"
            return f"R.Callable({params}, {ret}, {s.purity})"
        return f"<{type(s).__name__}>"

    def prim(self, e: Any) -> str:
        """A prim value's expression: bare for int64, typed otherwise."""
        if isinstance(e, IntImm) and e.dtype == INT64:
            return str(e.value)
        return self.expr(e, STRICT)

    # -- expressions -----------------------------------------------------------------------------
    @stack_safe
    def value(self, e: Any) -> str:
        """A relax value (a leaf or a call) as an expression; calls nested thousands deep too
        (`kiln.ir.deep`)."""
        if isinstance(e, Var):
            name = self.names.get(id(e))
            return name if name is not None else self.define(e, e.name_hint)
        if isinstance(e, GlobalVar):
            self.uses_cls = True
            return f"cls.{e.name_hint}"
        method = getattr(self, f"v_{type(e).__name__}", None)
        return method(e) if method is not None else f"<{type(e).__name__}>"

    def v_Constant(self, e: Constant) -> str:
        data = e.data
        dtype = quote(dtype_name(data))
        if self.meta is not None and self.meta.elides(data):
            ref = self.meta.ref(RELAX_CONSTANT, e, data)
            return f"R.const({ref}, {dtype}, shape={_literal(tuple(data.shape))})"
        return f"R.const({_literal(data.tolist())}, {dtype})"

    def v_ShapeExpr(self, e: ShapeExpr) -> str:
        return f"R.shape([{', '.join(self.dim(d) for d in e.values)}])"

    def v_PrimValue(self, e: PrimValue) -> str:
        return f"R.prim_value({self.prim(e.value)})"

    def v_StringImm(self, e: StringImm) -> str:
        return f"R.str({quote(e.value)})"

    def v_DataTypeImm(self, e: DataTypeImm) -> str:
        return f"R.dtype({quote(str(e.value))})"

    def v_ExternFunc(self, e: ExternFunc) -> str:
        return f"R.ExternFunc({quote(e.global_symbol)})"

    def v_Tuple(self, e: Tuple) -> str:
        items = [self.value(f) for f in e.fields]
        if not items:
            return "R.tuple()"
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"

    def v_TupleGetItem(self, e: TupleGetItem) -> str:
        return f"{self.value(e.tuple_value)}[{e.index}]"

    def v_Call(self, c: Call) -> str:
        args = [self.value(a) for a in c.args]
        op = c.op
        if isinstance(op, Op):
            if op.name in _SPECIAL:
                return self.special_call(c, args)
            args += self.attr_kwargs(c)
            if c.sinfo_args and _takes_sinfo_args(op):
                args.append(f"sinfo_args={self.sinfo_args(c)}")
            return f"R.{op.name.removeprefix('relax.')}({', '.join(args)})"
        if isinstance(op, ExternFunc):
            args = [quote(op.global_symbol), *args, f"sinfo_args={self.sinfo_args(c)}"]
            return f"R.call_packed({', '.join(args)})"
        if c.sinfo_args:
            args.append(f"sinfo_args={self.sinfo_args(c)}")
        return f"{self.value(op)}({', '.join(args)})"

    def sinfo_args(self, c: Call) -> str:
        items = [self.sinfo(s) for s in c.sinfo_args]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"

    def special_call(self, c: Call, args: list[str]) -> str:
        name = c.op.name.removeprefix("relax.")
        out = c.sinfo_args[0] if c.sinfo_args else ObjectStructInfo()
        if name == "call_pure_packed":
            callee = c.args[0]
            head = quote(callee.global_symbol) if isinstance(callee, ExternFunc) else args[0]
            rest = [head, *args[1:], f"sinfo_args={self.sinfo_args(c)}"]
            return f"R.call_pure_packed({', '.join(rest)})"
        if isinstance(out, TupleStructInfo):
            outs = f"[{', '.join(self.sinfo(f) for f in out.fields)}]"
        else:
            outs = self.sinfo(out)
        head = args[0]
        if isinstance(c.args[0], ExternFunc):
            head = quote(c.args[0].global_symbol)
        parts = [head, args[1], f"out_sinfo={outs}"]
        if len(c.args) > 2:
            parts.append(f"tir_vars={args[2]}")
        if name == "call_lowered":
            items = c.attrs.items()
            parts += [f"{k}={self.attr_value(_listed(v))}" for k, v in items]
        return f"R.{name}({', '.join(parts)})"

    def attr_kwargs(self, c: Call) -> list[str]:
        rec = find_op_def(c.op)
        params = inspect.signature(rec.builder).parameters if rec is not None else {}
        out = []
        for key, val in c.attrs.items():
            p = params.get(key)
            if p is not None and p.default is not inspect.Parameter.empty:
                if _same_attr(p.default, val):
                    continue
            out.append(f"{key}={self.attr_value(list(val) if isinstance(val, tuple) else val)}")
        return out

    def attr_value(self, v: Any) -> str:
        if isinstance(v, GlobalVar):
            self.uses_cls = True
            return f"cls.{v.name_hint}"
        return super().attr_value(v)

    # -- functions and bindings ------------------------------------------------------------------
    def func(self, f: Function, name: str, ind: int = 0, nested: bool = False) -> None:
        """Print ``f`` as ``def name`` (a nested function keeps the enclosing names)."""
        if not nested:
            self.reset_names()
            self.uses_cls = False
        quoted: set[int] = set()
        syms = [] if nested else self.declare_syms(f, quoted)
        params = [f"{self.define(p, p.name_hint)}: {self.sinfo(p.struct_info, quoted)}"
                  for p in f.params]  # fmt: skip
        ret = f" -> {self.sinfo(f.ret_struct_info)}" if f.ret_struct_info is not None else ""
        outer, self.lines = self.lines, []
        self.seq(f.body, ind + 1)
        body, self.lines = self.lines, outer
        opts = [] if nested or f.global_symbol is not None else ["private=True"]
        if not f.is_pure:
            opts.append("pure=False")
        self.emit(ind, "@R.function" + (f"({', '.join(opts)})" if opts else ""))
        self.emit(ind, f"def {name}({', '.join(params)}){ret}:")
        for v in syms:
            self.emit(ind + 1, f"{self.names[id(v)]} = {self.var_ctor(v)}")
        attrs = dict(f.attrs)
        if attrs.get("global_symbol") == name and not nested:
            del attrs["global_symbol"]
        if attrs:
            self.emit(ind + 1, f"R.func_attr({self.attr_value(attrs)})")
        if self.uses_cls and not nested:
            self.emit(ind + 1, f"cls = {self.module_name}")
        self.lines.extend(body)

    def declare_syms(self, f: Function, quoted: set[int]) -> list[TirVar]:
        """Name every symbolic variable of ``f``; those first met bare in a parameter print as
        strings there."""
        syms = tir_vars(f)
        for v in syms:
            self.define(v, v.name)
        seen: set[int] = set()
        for p in f.params:
            sinfo = p.struct_info_
            dims = sinfo.dims if isinstance(sinfo, TensorStructInfo) else None
            dims = sinfo.values if isinstance(sinfo, ShapeStructInfo) else dims
            dims = (sinfo.value,) if isinstance(sinfo, PrimStructInfo) else dims
            for d in dims or ():
                if isinstance(d, TirVar) and id(d) not in seen:
                    quoted.add(id(d))
            seen.update(id(v) for v in tir_vars(sinfo))
        return syms

    def seq(self, s: Any, ind: int) -> None:
        body = s.body if isinstance(s, SeqExpr) else s
        for block in s.blocks if isinstance(s, SeqExpr) else ():
            if isinstance(block, DataflowBlock):
                self.emit(ind, "with R.dataflow():")
                for b in block.bindings:
                    self.binding(b, ind + 1)
                outs = [self.names[id(b.var)] for b in block.bindings if type(b.var) is Var]
                self.emit(ind + 1, f"R.output({', '.join(outs)})")
            else:
                for b in block.bindings:
                    self.binding(b, ind)
        self.emit(ind, f"return {self.value(body)}")

    def binding(self, b: Binding, ind: int) -> None:
        value = b.value
        if isinstance(value, Function):
            self.func(value, self.define(b.var, b.var.name_hint), ind, nested=True)
            return
        if isinstance(value, If):
            self.if_binding(b, value, ind)
            return
        text = self.value(value)
        name = self.define(b.var, b.var.name_hint)
        if isinstance(b, MatchCast):
            self.emit(ind, f"{name} = R.match_cast({text}, {self.sinfo(b.struct_info)})")
        else:
            self.emit(ind, f"{name}: {self.sinfo(b.var.struct_info)} = {text}")

    def if_binding(self, b: Binding, e: If, ind: int) -> None:
        cond = self.value(e.cond)
        name = self.define(b.var, b.var.name_hint)
        ann = self.sinfo(b.var.struct_info)
        for head, branch in (("if " + cond + ":", e.true_branch), ("else:", e.false_branch)):
            self.emit(ind, head)
            outer, self.lines = self.lines, []
            self.seq(branch, ind + 1)
            ret = self.lines.pop()
            result = ret.strip().removeprefix("return ")
            self.lines.append("    " * (ind + 1) + f"{name}: {ann} = {result}")
            inner, self.lines = self.lines, outer
            self.lines.extend(inner)


def _listed(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v


def _takes_sinfo_args(op: Op) -> bool:
    """Whether the builder of operator ``op`` takes ``sinfo_args`` (``call_builtin_with_ctx``)."""
    rec = find_op_def(op)
    return rec is not None and "sinfo_args" in inspect.signature(rec.builder).parameters


def _same_attr(default: Any, value: Any) -> bool:
    if isinstance(default, list):
        default = tuple(default)
    if isinstance(default, DataType):
        default = str(default)
    return type(default) is type(value) and default == value


def _literal(v: Any) -> str:
    """A Python literal for a (nested list or tuple of) number(s); non-finite floats spelled
    out."""
    if isinstance(v, list):
        return f"[{', '.join(_literal(x) for x in v)}]"
    if isinstance(v, tuple):
        items = [_literal(x) for x in v]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"  # () too
    if isinstance(v, float) and not math.isfinite(v):
        return f"float({quote(repr(v))})"
    return repr(v)


def print_relax(node: Any, meta: MetadataWriter | None = None) -> str | None:
    """Script text of a relax node, or None when ``node`` is not one (large constants go to
    ``meta`` when given)."""
    p = RelaxPrinter(meta=meta)
    if isinstance(node, Function):
        sym = node.global_symbol
        p.func(node, sym if isinstance(sym, str) and sym.isidentifier() else "main")
        return "\n".join([HEADER, "", *p.lines]) + "\n"
    if isinstance(node, StructInfo):
        return p.sinfo(node)
    if isinstance(node, (Expr, GlobalVar)):
        if isinstance(node, (If, SeqExpr)):
            p.seq(node, 0) if isinstance(node, SeqExpr) else None
            return "\n".join(p.lines) if p.lines else f"<{type(node).__name__}>"
        return p.value(node)
    if isinstance(node, Binding):
        p.binding(node, 0)
        return "\n".join(p.lines)
    return None


__all__ = ["HEADER", "RelaxPrinter", "print_relax"]
