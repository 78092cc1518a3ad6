"""Evaluation of script expressions: Python semantics for Python values, IR for IR values.

Names resolve through the parser's scopes, then the function's closure / captured locals /
globals, then Python builtins. Operators on TIR expressions build nodes explicitly, so the IR is
exactly what the text says: ``a == b`` is ``EQ`` (kiln's ``==`` on nodes is identity), ``and`` /
``or`` / ``not`` are ``And`` / ``Or`` / ``Not``, ``0 <= i < n`` is ``And(LE, LT)``, and a Python
number next to an expression takes that expression's dtype. Every node an expression creates
gets the span of the AST node that created it.
"""

from __future__ import annotations

import ast
import builtins
import operator
from collections.abc import Mapping
from typing import Any, Callable

from kiln.config import debug_level
from kiln.errors import KilnError, ScriptError
from kiln.ir.deep import DeepWalker, descend
from kiln.ir.dtype import DataType
from kiln.ir.function import GlobalVar
from kiln.ir.node import Node
from kiln.ir.op import Op
from kiln.script.parser.source import Source
from kiln.script.tir_ns.frames import extent_between
from kiln.script.tir_ns.types import BufferSpec, VarSpec
from kiln.tir import op as tir_op
from kiln.tir.analysis.problems import expr_problem
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
    BufferLoad,
    Call,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Sub,
    convert,
)

INT32 = DataType("int", 32)
USER_ERRORS = (KilnError, TypeError, ValueError, ArithmeticError, IndexError, KeyError)

_BINOPS: dict[type, tuple[Callable[[Any, Any], Any], Any]] = {
    ast.Add: (operator.add, Add),
    ast.Sub: (operator.sub, Sub),
    ast.Mult: (operator.mul, Mul),
    ast.Div: (operator.truediv, Div),
    ast.FloorDiv: (operator.floordiv, FloorDiv),
    ast.Mod: (operator.mod, FloorMod),
    ast.Pow: (operator.pow, "pow"),
    ast.BitAnd: (operator.and_, None),
    ast.BitOr: (operator.or_, None),
    ast.BitXor: (operator.xor, None),
    ast.LShift: (operator.lshift, None),
    ast.RShift: (operator.rshift, None),
    ast.MatMult: (operator.matmul, "unsupported"),
}
_CMPOPS: dict[type, tuple[Callable[[Any, Any], Any], Any]] = {
    ast.Eq: (operator.eq, EQ),
    ast.NotEq: (operator.ne, NE),
    ast.Lt: (operator.lt, LT),
    ast.LtE: (operator.le, LE),
    ast.Gt: (operator.gt, GT),
    ast.GtE: (operator.ge, GE),
    ast.Is: (operator.is_, None),
    ast.IsNot: (operator.is_not, None),
    ast.In: (lambda a, b: a in b, None),
    ast.NotIn: (lambda a, b: a not in b, None),
}
_UNSUPPORTED_EXPR = {
    "Lambda": "lambda expressions are not supported in a script",
    "NamedExpr": "assignment expressions (:=) are not supported in a script",
    "ListComp": "comprehensions are not supported in a script; write a loop",
    "SetComp": "comprehensions are not supported in a script; write a loop",
    "DictComp": "comprehensions are not supported in a script; write a loop",
    "GeneratorExp": "generator expressions are not supported in a script; write a loop",
    "Await": "await is not supported in a script",
    "Yield": "yield is not supported in a script",
    "YieldFrom": "yield is not supported in a script",
    "Starred": "a starred expression is only allowed among call arguments",
    "Slice": "a slice is only allowed when indexing",
}


def one_line(e: BaseException) -> str:
    """The first line of an exception's message (a reason fit for a `ScriptError`)."""
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def one_line_repr(v: Any) -> str:
    """``repr(v)`` on one line, cut to 60 characters."""
    text = " ".join(repr(v).split())
    return text if len(text) <= 60 else text[:57] + "..."


def is_number(v: Any) -> bool:
    return isinstance(v, (bool, int, float)) and not isinstance(v, PrimExpr)


def unify(a: Any, b: Any) -> tuple[PrimExpr, PrimExpr]:
    """Two expressions; a Python number takes the dtype of the expression beside it."""
    if is_number(a) and isinstance(b, PrimExpr):
        a = convert(a, b.dtype)
    elif is_number(b) and isinstance(a, PrimExpr):
        b = convert(b, a.dtype)
    if not (isinstance(a, PrimExpr) and isinstance(b, PrimExpr)):
        raise TypeError(
            f"unsupported operand types {type(a).__name__} and {type(b).__name__} "
            "(expected TIR expressions or numbers)"
        )
    return a, b


def fill_spans(value: Any, make_span: Callable[[], Any]) -> None:
    """Give ``value`` and the nodes below it that have no span yet the span ``make_span()``."""
    if getattr(value, "span", 0) is not None:
        return
    span = make_span()
    stack = [value]
    while stack:
        n = stack.pop()
        if isinstance(n, tuple):
            stack.extend(n)
            continue
        if not isinstance(n, Node) or getattr(n, "span", 0) is not None:
            continue
        # NOTE: nodes are frozen; filling the one field nothing has set yet is the exception.
        # A node from the user's Python values keeps the span of its first use.
        object.__setattr__(n, "span", span)
        for name in n.field_names():
            if name != "span":
                child = getattr(n, name)
                if isinstance(child, (Node, tuple)):
                    stack.append(child)


def fill_below(node: Any, span: Any) -> None:
    """Give the nodes below ``node`` that have no span yet the span ``span``."""
    for name in node.field_names():
        if name != "span":
            child = getattr(node, name)
            for item in child if isinstance(child, tuple) else (child,):
                if isinstance(item, Node):
                    fill_spans(item, lambda: span)


def fill_all_spans(root: Any, span: Any) -> None:
    """Give every node below ``root`` without a span the span of its nearest enclosing node.

    NOTE: an expression that has a span was filled entirely when it was evaluated (and buffers
    when they were built), so the walk does not enter it: statements and scopes are what is left.
    """
    stack: list[tuple[Any, Any]] = [(root, span)]
    seen: set[int] = set()
    while stack:
        n, outer = stack.pop()
        if isinstance(n, (tuple, list)):
            stack.extend((x, outer) for x in n)
            continue
        if isinstance(n, Mapping):
            stack.extend((x, outer) for kv in n.items() for x in kv)
            continue
        if not isinstance(n, Node) or isinstance(n, Op) or id(n) in seen:
            continue
        seen.add(id(n))
        here = getattr(n, "span", 0)
        if here is None:
            object.__setattr__(n, "span", outer)
        elif isinstance(n, PrimExpr) and here != 0:
            continue
        elif here != 0:
            outer = here
        for name in n.field_names():
            if name != "span":
                child = getattr(n, name)
                if isinstance(child, (Node, tuple, Mapping)):
                    stack.append((child, outer))


class ExprEvaluator(DeepWalker):
    """Evaluates AST expressions against scopes and a Python environment."""

    def __init__(
        self,
        src: Source,
        env: list[Mapping[str, Any]],
        gv_dtypes: Mapping[GlobalVar, DataType] | None = None,
    ) -> None:
        self.src = src
        self.env = env
        self.gv_dtypes = gv_dtypes or {}
        self.scopes: list[dict[str, Any]] = [{}]

    # -- names ---------------------------------------------------------------------------------
    def lookup(self, name: str, node: ast.AST) -> Any:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        for mapping in self.env:
            if name in mapping:
                return mapping[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise self.src.error(node, f"name {name!r} is not defined")

    # -- the visit boundary ----------------------------------------------------------------------
    def eval(self, node: ast.expr) -> Any:
        """The value of expression ``node``; mistakes become `ScriptError`s at ``node``."""
        method = getattr(self, f"e_{type(node).__name__}", None)
        if method is None:
            reason = _UNSUPPORTED_EXPR.get(type(node).__name__)
            raise self.src.error(node, reason or f"unsupported syntax: {type(node).__name__}")
        try:
            value = descend(self, method, node)
        except ScriptError:
            raise
        except USER_ERRORS as e:
            raise self.src.error(node, one_line(e)) from None
        except Exception as e:
            raise internal_error(self.src, node, e) from debug_cause(e)
        if isinstance(value, Node):
            fill_spans(value, lambda: self.src.span(node))
            problem = expr_problem(value) if isinstance(value, PrimExpr) else None
            if problem is not None:
                raise self.src.error(node, problem)
        return value

    def at(self, node: ast.AST, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call ``fn``; a mistake it reports becomes a `ScriptError` at ``node`` (or its args)."""
        try:
            return fn(*args, **kwargs)
        except ScriptError:
            raise
        except USER_ERRORS as e:
            raise self.blame(node, e) from None

    def blame(self, node: ast.AST, e: BaseException) -> ScriptError:
        """A `ScriptError` for ``e`` at the string argument it names, else at ``node``."""
        reason = one_line(e)
        if isinstance(node, ast.Call):
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    if repr(arg.value) in reason:
                        return self.src.error(arg, reason)
        return self.src.error(node, reason)

    def truth(self, value: Any, node: ast.AST) -> bool:
        """The Python truth of a value deciding something while parsing; IR objects other than
        expressions (a buffer...) have none."""
        if isinstance(value, (Node, BufferSpec, VarSpec)):
            what = f"buffer {value.name!r}" if isinstance(value, Buffer) else type(value).__name__
            raise self.src.error(
                node, f"{what} cannot be a condition; compare a value, as in A[0] > 0"
            )
        return bool(value)

    # -- atoms -----------------------------------------------------------------------------------
    def e_Constant(self, node: ast.Constant) -> Any:
        if node.value is Ellipsis:
            raise self.src.error(node, "`...` is not supported in a script")
        return node.value

    def e_Name(self, node: ast.Name) -> Any:
        return self.lookup(node.id, node)

    def e_Attribute(self, node: ast.Attribute) -> Any:
        obj = self.eval(node.value)
        try:
            return getattr(obj, node.attr)
        except AttributeError:
            raise self.src.error(node, _missing_attr(obj, node.attr)) from None

    def e_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self.eval_items(node.elts))

    def e_List(self, node: ast.List) -> list:
        return self.eval_items(node.elts)

    def e_Set(self, node: ast.Set) -> set:
        return set(self.eval_items(node.elts))

    def e_Dict(self, node: ast.Dict) -> dict:
        out: dict = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                out.update(self.eval(v))
            else:
                out[self.eval(k)] = self.eval(v)
        return out

    def e_JoinedStr(self, node: ast.JoinedStr) -> str:
        parts = []
        for v in node.values:
            if isinstance(v, ast.FormattedValue):
                value = self.eval(v.value)
                conv = {115: str, 114: repr, 97: ascii}.get(v.conversion)
                value = conv(value) if conv else value
                spec = self.eval(v.format_spec) if v.format_spec is not None else ""
                parts.append(format(value, spec))
            else:
                parts.append(str(self.eval(v)))
        return "".join(parts)

    def eval_items(self, elts: list[ast.expr]) -> list:
        out: list = []
        for e in elts:
            if isinstance(e, ast.Starred):
                out.extend(self.eval(e.value))
            else:
                out.append(self.eval(e))
        return out

    # -- operators -------------------------------------------------------------------------------
    def e_BinOp(self, node: ast.BinOp) -> Any:
        a, b = self.eval(node.left), self.eval(node.right)
        py, kind = _BINOPS[type(node.op)]
        if not (isinstance(a, PrimExpr) or isinstance(b, PrimExpr)):
            return py(a, b)
        if kind == "unsupported":
            raise self.src.error(node, "the @ operator is not supported on TIR expressions")
        a, b = unify(a, b)
        if kind == "pow":
            return tir_op.math("pow", a, b)
        return kind(a, b) if kind is not None else py(a, b)

    def e_UnaryOp(self, node: ast.UnaryOp) -> Any:
        v = self.eval(node.operand)
        op = node.op
        if isinstance(v, PrimExpr):
            if isinstance(op, ast.Not):
                return Not(v)
            if isinstance(op, ast.UAdd):
                return v
            return -v if isinstance(op, ast.USub) else ~v
        if isinstance(op, ast.Not):
            return not self.truth(v, node.operand)
        return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}[
            type(op)
        ](v)

    def e_BoolOp(self, node: ast.BoolOp) -> Any:
        is_and = isinstance(node.op, ast.And)
        exprs: list[PrimExpr] = []
        last: Any = None
        for item in node.values:
            v = self.eval(item)
            if not isinstance(v, PrimExpr):
                if not exprs:
                    if self.truth(v, item) != is_and:  # decided by a Python value, as in Python
                        return v
                    last = v
                    continue
                v = convert(self.truth(v, item))
            exprs.append(v)
        if not exprs:
            return last
        out = exprs[0]
        for e in exprs[1:]:
            out = And(out, e) if is_and else Or(out, e)
        return out

    def e_Compare(self, node: ast.Compare) -> Any:
        left = self.eval(node.left)
        parts = []
        for op, comp in zip(node.ops, node.comparators):
            right = self.eval(comp)
            py, cls = _CMPOPS[type(op)]
            if isinstance(left, PrimExpr) or isinstance(right, PrimExpr):
                if cls is None:
                    if isinstance(op, (ast.Is, ast.IsNot)):
                        parts.append(py(left, right))
                        left = right
                        continue
                    raise self.src.error(node, "`in` is not supported on TIR expressions")
                parts.append(cls(*unify(left, right)))
            else:
                parts.append(py(left, right))
            left = right
        if not any(isinstance(p, PrimExpr) for p in parts):
            return all(parts) if len(parts) > 1 else parts[0]
        exprs = [p if isinstance(p, PrimExpr) else convert(bool(p)) for p in parts]
        out = exprs[0]
        for e in exprs[1:]:
            out = And(out, e)
        return out

    def e_IfExp(self, node: ast.IfExp) -> Any:
        cond = self.eval(node.test)
        if isinstance(cond, PrimExpr):
            raise self.src.error(
                node, "`a if cond else b` needs a Python condition; use T.if_then_else or T.Select"
            )
        return self.eval(node.body) if self.truth(cond, node.test) else self.eval(node.orelse)

    # -- calls and indexing ------------------------------------------------------------------------
    def e_Call(self, node: ast.Call) -> Any:
        func = self.eval(node.func)
        args = self.eval_items(node.args)
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                kwargs.update(self.eval(kw.value))
            else:
                kwargs[kw.arg] = self.eval(kw.value)
        try:
            return self.call(func, args, kwargs, node)
        except ScriptError:
            raise
        except Exception as e:  # raised by the user's callee (T function or Python helper)
            raise self.blame(node, e) from None

    def call(self, func: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
        if isinstance(func, GlobalVar):
            if kwargs:
                raise TypeError(f"{func.name_hint}() takes no keyword arguments")
            dtype = self.gv_dtypes.get(func, INT32)
            return Call(dtype, func, tuple(convert(a) for a in args))
        if func in (builtins.min, builtins.max) and any(isinstance(a, PrimExpr) for a in args):
            cls = Min if func is builtins.min else Max
            out = args[0]
            for a in args[1:]:
                out = cls(*unify(out, a))
            return out
        if not callable(func):
            raise TypeError(f"{ast.unparse(node.func)} is not callable (it is {func!r})")
        return func(*args, **kwargs)

    def e_Subscript(self, node: ast.Subscript) -> Any:
        obj = self.eval(node.value)
        if isinstance(obj, Buffer):
            indices = self.buffer_indices(obj, node.slice, node)
            return BufferLoad(obj, indices)
        return obj[self.python_index(node.slice)]

    def python_index(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Slice):
            parts = (node.lower, node.upper, node.step)
            return slice(*(self.eval(p) if p is not None else None for p in parts))
        if isinstance(node, ast.Tuple):
            return tuple(self.python_index(e) for e in node.elts)
        return self.eval(node)

    def buffer_indices(self, buf: Buffer, node: ast.expr, whole: ast.AST) -> tuple:
        """The indices of ``buf[...]``; a slice ``a:b`` becomes a `Ramp` (a vector access)."""
        elts = node.elts if isinstance(node, ast.Tuple) else [node]
        out: list[Any] = []
        for e in elts:
            if isinstance(e, ast.Slice):
                out.append(self.slice_ramp(e))
                continue
            v = self.eval(e)
            items = list(v) if isinstance(v, (tuple, list)) else [v]
            for item in items:
                if isinstance(item, float) or (
                    isinstance(item, PrimExpr) and not item.dtype.is_integer
                ):
                    raise self.src.error(e, f"a buffer index must be an integer, got {item!r}")
                if not isinstance(item, (int, PrimExpr)):
                    raise self.src.error(e, f"a buffer index must be an integer, got {item!r}")
                out.append(item)
        if len(out) != len(buf.shape):
            raise self.src.error(
                whole,
                f"buffer {buf.name!r} has {len(buf.shape)} dimension(s) but is indexed with "
                f"{len(out)} indices",
            )
        return tuple(out)

    def slice_ramp(self, node: ast.Slice) -> PrimExpr:
        if node.upper is None:
            raise self.src.error(node, "a buffer slice needs an explicit end, as in A[0:4]")
        lo = convert(self.eval(node.lower) if node.lower is not None else 0)
        stop = convert(self.eval(node.upper), lo.dtype)
        step = self.eval(node.step) if node.step is not None else 1
        extent = extent_between(lo, stop)
        if not isinstance(extent, IntImm) or not isinstance(step, int) or step <= 0:
            raise self.src.error(node, "a buffer slice needs a constant length and step")
        lanes = (extent.value + step - 1) // step
        return Ramp(lo, convert(step, lo.dtype), lanes) if lanes > 1 else lo


def _missing_attr(obj: Any, attr: str) -> str:
    name = getattr(obj, "__name__", "")
    if name == "kiln.script.tir":
        if attr in ("block", "init", "reads", "writes", "axis", "where", "block_attr"):
            return f"T.{attr} (TensorIR blocks) is not supported"
        return f"unknown T function or type 'T.{attr}'"
    if name == "kiln.script.ir":
        return f"unknown I function 'I.{attr}'"
    if isinstance(obj, ModuleRef):
        return f"module {obj.class_name!r} has no function {attr!r}"
    return f"{type(obj).__name__} has no attribute {attr!r}"


class ModuleRef:
    """The class name inside an ``I.ir_module`` class: ``Module.f`` is the GlobalVar of f."""

    def __init__(self, class_name: str, gvars: dict[str, GlobalVar]) -> None:
        self.class_name = class_name
        self.gvars = gvars

    def __getattr__(self, name: str) -> GlobalVar:
        try:
            return self.__dict__["gvars"][name]
        except KeyError:
            raise AttributeError(name) from None


def debug_cause(e: BaseException) -> BaseException | None:
    """The cause to chain to an internal error: shown only with ``KILN_DEBUG`` set."""

    return e if debug_level() else None


def internal_error(src: Source, node: ast.AST, e: BaseException) -> ScriptError:
    """A `ScriptError` for a kiln bug met while parsing ``node``."""
    return src.error(node, f"internal error: {type(e).__name__}: {one_line(e)}")
