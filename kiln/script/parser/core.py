"""The T dialect: parsing of a ``@T.prim_func`` function into a `PrimFunc`.

A non-private function gets ``global_symbol`` = its name (first among its attributes) unless
``T.func_attr`` sets one; ``@T.prim_func(private=True)`` gets none. In a module, each function
declares its return dtype first (int32 for functions that return nothing), so
``Module.callee(...)`` works whatever the order of definitions.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kiln.ir.dtype import DataType
from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.node import Attrs, FrozenMap, Node
from kiln.script.parser.dialect import Dialect, ModuleContext, register_dialect
from kiln.script.parser.expr import ExprEvaluator, fill_all_spans, fill_below
from kiln.script.parser.source import Source
from kiln.script.parser.stmt import StmtParser
from kiln.script.tir_ns.frames import FuncAttrs, MatchBufferSpec
from kiln.script.tir_ns.types import HANDLE, BufferSpec, DTypeCtor, VarSpec
from kiln.tir.analysis import verify_well_formed
from kiln.tir.analysis.problems import always_returns, returns_value
from kiln.tir.buffer import Buffer
from kiln.tir.expr import Var
from kiln.tir.function import PrimFunc
from kiln.tir.stmt import IterVar
from kiln.tir.type import VOID, PointerType, PrimType, TupleType

INT32_TYPE = PrimType("int32")


@dataclass(frozen=True)
class PrimFuncOptions:
    """Options of ``@T.prim_func(...)``."""

    private: bool = False
    check_well_formed: bool = True


def annotation_type(ev: ExprEvaluator, node: ast.expr | None) -> PrimType | PointerType | TupleType:
    """The return type a ``-> T.int32`` annotation names (void without one)."""
    if node is None or (isinstance(node, ast.Constant) and node.value is None):
        return VOID
    ann = ev.eval(node)
    if isinstance(ann, DTypeCtor):
        ann = ann.spec()
    if not isinstance(ann, VarSpec):
        raise ev.src.error(node, "a return annotation must be a type such as T.int32")
    if not ann.is_handle and isinstance(ann.dtype, DataType) and ann.dtype.is_void:
        return VOID
    return ev.at(node, ann.var_type)[1]


def attr_value_ok(v: Any) -> bool:
    """Whether ``v`` can be an attribute value: data (numbers, strings, containers of them), IR,
    or an object such as a `Target`; not a module, function, class or script-only helper."""
    if isinstance(v, (list, tuple)):
        return all(attr_value_ok(x) for x in v)
    if isinstance(v, dict):
        return all(attr_value_ok(k) and attr_value_ok(x) for k, x in v.items())
    if isinstance(v, (types.ModuleType, type)) or callable(v) and not isinstance(v, Node):
        return False
    return not type(v).__module__.startswith("kiln.script")


class FuncParser(StmtParser):
    """Parses one ``def`` into a `PrimFunc`."""

    def __init__(
        self,
        src: Source,
        env: list[Mapping[str, Any]],
        gv_dtypes: Mapping[GlobalVar, Any] | None = None,
    ) -> None:
        super().__init__(src, env, gv_dtypes)
        self.params: list[Var] = []
        self.buffer_map: dict[Var, Buffer] = {}
        self.attrs: dict[str, Any] = {}
        self.env_threads: dict[Var, IterVar] = {}

    def env_thread(self, var: Var) -> IterVar | None:
        return self.env_threads.get(var)

    def register_env_thread(self, iv: IterVar) -> None:
        self.env_threads[iv.var] = iv

    def func_attr(self, attrs: FuncAttrs, node: ast.stmt) -> None:
        if self.depth:
            raise self.src.error(node, "T.func_attr is only allowed at the top of a function body")
        if not isinstance(attrs.attrs, dict):
            raise self.src.error(node, "T.func_attr takes a dict of attributes")
        for key, value in attrs.attrs.items():
            if not isinstance(key, str):
                raise self.src.error(node, f"T.func_attr: attribute names are strings, got {key!r}")
            if not attr_value_ok(value):
                raise self.src.error(
                    node,
                    f"T.func_attr: the value of {key!r} is a {type(value).__name__}; attribute "
                    "values are numbers, strings, lists, tuples, dicts or IR",
                )
        self.attrs.update(attrs.attrs)

    def match_buffer(self, name: str, spec: MatchBufferSpec, node: ast.stmt) -> Buffer:
        if self.depth:
            raise self.src.error(node, "T.match_buffer is only allowed at the top of a function")
        param = spec.param
        if not (isinstance(param, Var) and any(param is p for p in self.params)):
            raise self.src.error(
                node, "the first argument of T.match_buffer must be a handle parameter"
            )
        if param in self.buffer_map:
            raise self.src.error(node, f"parameter {param.name!r} already has a buffer")
        buf = self.at(getattr(node, "value", node), spec.spec.build, name, self.src.span(node))
        self.buffer_map[param] = buf
        return buf

    def parse(self, fdef: ast.FunctionDef, options: PrimFuncOptions) -> PrimFunc:
        self.check_signature(fdef)
        for arg in fdef.args.args:
            self.param(arg)
        ret_type = annotation_type(self, fdef.returns)
        if isinstance(ret_type, PrimType):
            self.ret_dtype = ret_type.dtype
        body = self.parse_body(fdef.body)
        if returns_value(ret_type) and not always_returns(body):
            raise self.src.error(
                fdef.returns or fdef,
                f"function {fdef.name!r} returns {ret_type} but can reach its end without a "
                "return statement",
            )
        attrs = dict(self.attrs)
        if not options.private and "global_symbol" not in attrs:
            attrs = {"global_symbol": fdef.name, **attrs}
        span = self.src.span(fdef)
        func = self.at(
            fdef,
            PrimFunc,
            tuple(self.params),
            body,
            ret_type,
            FrozenMap(self.buffer_map),
            Attrs(attrs),
            span,
        )
        fill_all_spans(func, span)
        return func

    def check_signature(self, fdef: ast.FunctionDef) -> None:
        a = fdef.args
        extra = a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or a.defaults
        if extra:
            raise self.src.error(
                fdef, "script functions take plain parameters (no defaults, *args or **kwargs)"
            )

    def param(self, arg: ast.arg) -> None:
        name, span = arg.arg, self.src.span(arg)
        if any(name in scope for scope in self.scopes):
            raise self.src.error(arg, f"parameter {name!r} is listed twice")
        if arg.annotation is None:
            raise self.src.error(
                arg, f"parameter {name!r} needs a type such as T.int32, T.handle or T.Buffer(...)"
            )
        ann = self.eval(arg.annotation)
        if isinstance(ann, BufferSpec):
            buf = self.at(arg.annotation, ann.build, name, span)
            fill_below(buf, span)
            var = Var(name, HANDLE, span=span)
            self.buffer_map[var] = buf
            self.bind(name, buf, arg)
        else:
            if isinstance(ann, DTypeCtor):
                ann = ann.spec()
            if not isinstance(ann, VarSpec):
                raise self.src.error(
                    arg.annotation, "expected a type such as T.int32, T.handle or T.Buffer(...)"
                )
            var = self.at(arg.annotation, ann.make, name, span)
            self.bind(name, var, arg)
        self.params.append(var)


class TirDialect(Dialect):
    """``@T.prim_func`` functions."""

    name = "T.prim_func"
    options_type = PrimFuncOptions

    def owns(self, func: BaseFunc) -> bool:
        return isinstance(func, PrimFunc)

    def declare(
        self, ctx: ModuleContext, fdef: ast.FunctionDef, options: Any, ev: ExprEvaluator
    ) -> Any:
        return annotation_type(ev, fdef.returns)

    def parse(
        self,
        src: Source,
        fdef: ast.FunctionDef,
        env: list[Mapping[str, Any]],
        options: Any,
        ctx: ModuleContext | None,
    ) -> BaseFunc:
        gv_dtypes: dict[GlobalVar, Any] = {}
        if ctx is not None:
            for name, gv in ctx.gvars.items():
                dialect = ctx.dialect_of.get(name)  # None: a partial module's outside function
                if dialect is self:
                    ret = ctx.declared[name]
                    gv_dtypes[gv] = ret.dtype if isinstance(ret, PrimType) else INT32_TYPE.dtype
                elif dialect is None:
                    gv_dtypes[gv] = INT32_TYPE.dtype
        return FuncParser(src, env, gv_dtypes).parse(fdef, options)

    def errors(self, obj: BaseFunc | IRModule) -> list[str]:
        return verify_well_formed(obj, raise_error=False)  # type: ignore[arg-type]


TIR = register_dialect(TirDialect())
