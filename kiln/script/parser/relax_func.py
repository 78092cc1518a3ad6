"""The R dialect: parsing of an ``@R.function`` into a relax `Function`.

Statements of a function body:

- ``x = value`` / ``x: R.Tensor(...) = value`` bind a variable (a `DataflowVar` inside a
  dataflow block unless ``R.output`` lists it); an annotation must provably fit the value, and
  the variable gets the annotation (new symbolic variables in it are bound to the value's dims);
  ``x = R.match_cast(value, sinfo)`` is a `MatchCast`; a bare value statement binds ``_``;
  ``n = T.int64()`` declares symbolic variable ``n`` (usable in the signature too); other Python
  values (``cls = Module``) are plain names;
- ``with R.dataflow():`` ... ``R.output(a, b)``: a dataflow block;
- ``if cond: ... else: ...``: an `If`; each branch ends by assigning the same name, which is
  bound to the `If` after it;
- a nested ``@R.function`` is a local function bound to its name;
- ``R.func_attr({...})`` sets attributes; ``return value`` (last) gives the result.

Nested calls are normalized into their own bindings (A-normal form) by the `BlockBuilder`,
which also reports shape and dtype mistakes; every mistake becomes a `ScriptError` at the
statement or expression that made it.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kiln.errors import ScriptError
from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.node import Attrs
from kiln.relax.analysis.struct_info import Fit, check_fits, substitute_sinfo, tir_vars
from kiln.relax.analysis.well_formed import well_formed_errors
from kiln.relax.binding import MatchCast, VarBinding
from kiln.relax.block_builder import BlockBuilder
from kiln.relax.expr import Call, DataflowVar, Expr, Function, If, SeqExpr, Var
from kiln.relax.op.common import describe
from kiln.relax.struct_info import (
    UNIT,
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    StructInfo,
)
from kiln.script.parser.dialect import OUTSIDE, Dialect, ModuleContext, register_dialect
from kiln.script.parser.expr import (
    USER_ERRORS,
    ExprEvaluator,
    debug_cause,
    internal_error,
    one_line,
)
from kiln.script.parser.relax_expr import DataflowLocal, RelaxEvaluator, as_value, is_value
from kiln.script.parser.source import Source
from kiln.script.relax_ns.api import DataflowFrame, MatchCastSpec, OutputMarker, output
from kiln.script.tir_ns.frames import FuncAttrs
from kiln.script.tir_ns.types import VarSpec


@dataclass(frozen=True)
class RelaxFunctionOptions:
    """Options of ``@R.function(...)``."""

    private: bool = False
    pure: bool = True
    check_well_formed: bool = True


class RelaxFuncParser(RelaxEvaluator):
    """Parses one ``@R.function`` (see the module docstring)."""

    def __init__(
        self,
        src: Source,
        env: list[Mapping[str, Any]],
        bb: BlockBuilder,
        outer: RelaxFuncParser | None = None,
        outside: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(src, env, outer=outer)
        self.bb = bb
        self.outside = outer.outside if outer is not None else outside
        """A partial module's functions that the text calls but does not define: a binding's
        annotation is the result of a call of one (nothing else says what it returns)."""
        self.attrs: dict[str, Any] = {}
        self.outputs: set[str] | None = None
        self.depth = 0
        self.ann_cache: dict[str, tuple[StructInfo, list[tuple[str, Any]]]] = {}
        if outer is not None:
            self.scopes = [dict(s) for s in outer.scopes] + [{}]

    # -- signature ---------------------------------------------------------------------------------
    def predeclare(self, body: list[ast.stmt]) -> None:
        """Make the symbolic variables ``n = T.int64()`` of the body usable in the signature."""
        for stmt in body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
                continue
            target, value = stmt.targets[0], stmt.value
            if not isinstance(target, ast.Name) or not isinstance(value, ast.Call):
                continue
            if value.args or not isinstance(value.func, (ast.Attribute, ast.Name)):
                continue
            spec = self.eval(value)
            if isinstance(spec, VarSpec):
                var = self.at(value, self.declare_sym, target.id, spec, self.src.span(target))
                self.scopes[-1][target.id] = var

    def signature(self, fdef: ast.FunctionDef) -> tuple[list[Var], StructInfo | None]:
        a = fdef.args
        if a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or a.defaults:
            raise self.src.error(
                fdef, "script functions take plain parameters (no defaults, *args or **kwargs)"
            )
        self.predeclare(fdef.body)
        params = []
        for arg in a.args:
            if arg.annotation is None:
                raise self.src.error(
                    arg, f"parameter {arg.arg!r} needs an annotation such as R.Tensor"
                )
            sinfo = self.at(arg.annotation, self.resolve, self.eval(arg.annotation))
            var = Var(arg.arg, sinfo, self.src.span(arg))
            self.scopes[-1][arg.arg] = var
            params.append(var)
        ret = None
        if fdef.returns is not None:
            ret = self.at(fdef.returns, self.resolve, self.eval(fdef.returns))
        return params, ret

    def declared_sinfo(self, fdef: ast.FunctionDef, options: RelaxFunctionOptions) -> StructInfo:
        params, ret = self.signature(fdef)
        return FuncStructInfo(
            tuple(p.struct_info for p in params), ret or ObjectStructInfo(), options.pure
        )

    # -- the function --------------------------------------------------------------------------
    def parse(self, fdef: ast.FunctionDef, options: RelaxFunctionOptions, name: str) -> Function:
        params, ret = self.signature(fdef)
        self.bb.begin_scope(params)
        try:
            body = self.parse_body(fdef.body, fdef)
        finally:
            blocks = self.bb.end_scope()
        attrs = dict(self.attrs)
        if not options.private and "global_symbol" not in attrs:
            attrs = {"global_symbol": name, **attrs}
        span = self.src.span(fdef)
        seq = SeqExpr(tuple(blocks), body, None, span)
        attrs_node = self.at(fdef, Attrs, attrs)
        func = Function(tuple(params), seq, ret, options.pure, attrs_node, None, span)
        func = self.at(fdef, self.bb.normalize, func)
        fill_relax_spans(func, span)
        return func

    def parse_body(self, stmts: list[ast.stmt], fdef: ast.FunctionDef) -> Expr:
        for k, stmt in enumerate(stmts):
            if isinstance(stmt, ast.Return):
                if k != len(stmts) - 1:
                    raise self.src.error(stmts[k + 1], "statements after return are unreachable")
                return self.ret(stmt)
            self.visit_stmt(stmt)
        raise self.src.error(fdef, f"function {fdef.name!r} needs a return statement at its end")

    def ret(self, node: ast.Return) -> Expr:
        if node.value is None:
            raise self.src.error(node, "return needs a value (use R.tuple() for nothing)")
        value = self.at(node.value, as_value, self.eval(node.value))
        if not isinstance(value, Expr):
            raise self.src.error(node.value, f"cannot return a {type(value).__name__}")
        return self.at(node.value, self.bb.normalize_arg, value)

    # -- statements ------------------------------------------------------------------------------
    def visit_stmt(self, node: ast.stmt) -> None:
        """One statement; mistakes become `ScriptError`s at ``node``."""
        method = getattr(self, f"s_{type(node).__name__}", None)
        if method is None:
            raise self.src.error(node, f"{type(node).__name__} statements are not supported in R")
        try:
            method(node)
        except ScriptError:
            raise
        except USER_ERRORS as e:
            raise self.src.error(node, one_line(e)) from None
        except Exception as e:
            raise internal_error(self.src, node, e) from debug_cause(e)

    def s_Pass(self, node: ast.Pass) -> None:
        return None

    def s_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None
        value = self.eval(node.value)
        if isinstance(value, FuncAttrs):
            if self.depth or not isinstance(value.attrs, dict):
                raise self.src.error(node, "R.func_attr({...}) belongs at the top of a function")
            self.attrs.update(value.attrs)
        elif isinstance(value, OutputMarker):
            raise self.src.error(
                node, "R.output(...) is only allowed at the end of a dataflow block"
            )
        elif is_value(value):
            self.bind("_", value, None, node.value)
        elif value is not None:
            raise self.src.error(node, f"a {type(value).__name__} value cannot be a statement")

    def s_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            target = node.targets[0] if len(node.targets) == 1 else node
            raise self.src.error(target, "assign to one name per statement in R functions")
        name = node.targets[0].id
        value = self.eval(node.value)
        if isinstance(value, MatchCastSpec):
            self.match_cast(name, value, node)
        elif isinstance(value, VarSpec):
            self.scopes[-1][name] = self.at(
                node.value, self.declare_sym, name, value, self.src.span(node.targets[0])
            )
        elif is_value(value):
            self.bind(name, value, None, node.value, node.targets[0])
        else:
            self.scopes[-1][name] = value  # a Python value (cls = Module, a constant...)

    def s_AnnAssign(self, node: ast.AnnAssign) -> None:
        if not isinstance(node.target, ast.Name) or node.value is None:
            raise self.src.error(
                node, "an annotated binding is written name: R.Tensor(...) = value"
            )
        ann = self.annotation(node.annotation)
        value = self.eval(node.value)
        if isinstance(value, MatchCastSpec):
            self.match_cast(node.target.id, value, node)
            return
        if not is_value(value):
            raise self.src.error(node.value, f"cannot bind a {type(value).__name__} in R")
        self.bind(node.target.id, value, (ann, node.annotation), node.value, node.target)

    def annotation(self, node: ast.expr) -> StructInfo:
        """The struct info an annotation stands for. NOTE: printed functions repeat the same
        annotation text on many bindings; it is resolved once per function and reused while
        every name it mentions still means the same object."""
        key = self.source_text(node)
        hit = self.ann_cache.get(key) if key is not None else None
        if hit is not None and all(self.meaning(n) is v for n, v in hit[1]):
            return hit[0]
        sinfo = self.at(node, self.resolve, self.eval(node))
        if key is not None:
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            self.ann_cache[key] = (sinfo, [(n, self.meaning(n)) for n in names])
        return sinfo

    def source_text(self, node: ast.expr) -> str | None:
        if node.lineno != node.end_lineno:
            return None
        line = self.src.line_text(node.lineno)
        return line[node.col_offset : node.end_col_offset] if line.isascii() else None

    def meaning(self, name: str) -> Any:
        try:
            return self.lookup(name, None)  # type: ignore[arg-type]
        except ScriptError:
            return None

    def bind(
        self,
        name: str,
        value: Any,
        ann: tuple[StructInfo, ast.AST] | None,
        vnode: ast.AST,
        tnode: ast.AST | None = None,
    ) -> Var:
        """Emit ``name = value`` into the current block and bind ``name`` to the variable."""
        value = self.at(vnode, self.bb.normalize, as_value(value))
        sinfo = value.struct_info
        if ann is not None:
            sinfo = self.fit_annotation(ann[0], value, ann[1])
        span = self.src.span(tnode if tnode is not None else vnode)
        var = self.new_var(name, sinfo, span)
        self.bb.emit_normalized(VarBinding(var, value, span))
        self.scopes[-1][name] = var
        return var

    def new_var(self, name: str, sinfo: StructInfo, span: Any) -> Var:
        dataflow = self.outputs is not None and name not in self.outputs
        return (DataflowVar if dataflow else Var)(name, sinfo, span)

    def fit_annotation(self, ann: StructInfo, value: Expr, node: ast.AST) -> StructInfo:
        """``ann`` when the value fits it, its new symbolic variables bound to the value's."""
        if ann is value.struct_info:
            return ann
        fresh = [v for v in tir_vars(ann) if not self.bb.is_defined_symbolic(v)]
        binds: dict[Any, Any] = {v: None for v in fresh}
        fit = check_fits(ann, value.struct_info, binds)
        if fit is Fit.UNKNOWN and _callee_name(value) in self.outside:
            return ann
        if fit is not Fit.PASS:
            why = "does not fit" if fit is Fit.FAIL else "cannot be proven to fit"
            hint = "" if fit is Fit.FAIL else "; use R.match_cast to check it at run time"
            raise self.src.error(
                node, f"the annotation {ann} {why} the value {describe(value)}{hint}"
            )
        return substitute_sinfo(ann, {v: e for v, e in binds.items() if e is not None})

    def match_cast(self, name: str, spec: MatchCastSpec, node: ast.stmt) -> None:
        where = getattr(node, "value", node)
        sinfo = self.at(where, self.resolve, spec.struct_info)
        value = self.at(where, self.bb.normalize, as_value(spec.value))
        if check_fits(sinfo, value.struct_info) is Fit.FAIL and not _object(value):
            raise self.src.error(
                where, f"R.match_cast can never succeed: {describe(value)} as {sinfo}"
            )
        span = self.src.span(node)
        var = self.new_var(name, sinfo, span)
        self.bb.emit_normalized(MatchCast(var, value, sinfo, span))
        self.scopes[-1][name] = var

    def s_With(self, node: ast.With) -> None:
        if len(node.items) != 1 or node.items[0].optional_vars is not None:
            raise self.src.error(node, "R functions use `with R.dataflow():` only")
        frame = self.eval(node.items[0].context_expr)
        if not isinstance(frame, DataflowFrame):
            raise self.src.error(node.items[0].context_expr, "expected `with R.dataflow():`")
        if self.outputs is not None or self.depth:
            raise self.src.error(node, "a dataflow block must be at the top level of a function")
        *body, last = node.body
        names = self.output_names(last)
        self.bb.begin_dataflow_block()
        self.outputs = set(names)
        before = set(self.scopes[-1])
        try:
            for stmt in body:
                self.visit_stmt(stmt)
        finally:
            self.outputs = None
        for n in names:
            v = self.scopes[-1].get(n)
            if not isinstance(v, Var) or isinstance(v, DataflowVar) or n in before:
                raise self.src.error(last, f"R.output: {n!r} is not bound in this dataflow block")
        for n, v in list(self.scopes[-1].items()):
            if isinstance(v, DataflowVar):
                self.scopes[-1][n] = DataflowLocal(n)
        self.bb.begin_binding_block()

    def output_names(self, last: ast.stmt) -> list[str]:
        call = last.value if isinstance(last, ast.Expr) else None
        if not isinstance(call, ast.Call) or self.eval(call.func) is not output:
            raise self.src.error(last, "a dataflow block ends with R.output(...)")
        names = []
        for a in call.args:  # type: ignore[union-attr]
            if not isinstance(a, ast.Name):
                raise self.src.error(a, "R.output takes the names of variables of the block")
            names.append(a.id)
        return names

    def s_If(self, node: ast.If) -> None:
        if self.outputs is not None:
            raise self.src.error(node, "if/else is not allowed inside a dataflow block")
        cond = self.at(node.test, self.bb.normalize_arg, as_value(self.eval(node.test)))
        if not node.orelse:
            raise self.src.error(node, "an if statement in R needs an else branch")
        name_t, ann, then = self.branch(node.body, node)
        name_f, _, other = self.branch(node.orelse, node)
        if name_t != name_f:
            raise self.src.error(
                node,
                f"both branches must end by assigning the same name ({name_t!r} vs {name_f!r})",
            )
        value = If(cond, then, other, None, self.src.span(node))
        self.bind(name_t, value, ann, node)

    def branch(self, stmts: list[ast.stmt], node: ast.If) -> tuple[str, Any, SeqExpr]:
        last = stmts[-1]
        self.scopes.append({})
        self.depth += 1
        self.bb.begin_scope()
        try:
            for stmt in stmts[:-1]:
                self.visit_stmt(stmt)
            name, ann, body = self.branch_result(last)
        finally:
            blocks = self.bb.end_scope()
            self.scopes.pop()
            self.depth -= 1
        return name, ann, SeqExpr(tuple(blocks), body, None, self.src.span(last))

    def branch_result(self, last: ast.stmt) -> tuple[str, Any, Expr]:
        if isinstance(last, ast.If):
            self.visit_stmt(last)
            name = _assigned_name(last)
            return name, None, self.scopes[-1][name]
        target = (
            last.targets[0] if isinstance(last, ast.Assign) and len(last.targets) == 1 else None
        )
        target = last.target if isinstance(last, ast.AnnAssign) else target
        if not isinstance(target, ast.Name) or last.value is None:  # type: ignore[union-attr]
            raise self.src.error(last, "a branch ends by assigning its result to a name")
        ann = None
        if isinstance(last, ast.AnnAssign):
            ann = (self.at(last.annotation, self.resolve, self.eval(last.annotation)), last)
        value = as_value(self.eval(last.value))  # type: ignore[arg-type]
        if not is_value(value):
            raise self.src.error(last, f"a branch result must be a relax value, got {value!r}")
        body = self.at(last.value, self.bb.normalize_arg, value)  # type: ignore[arg-type]
        return target.id, ann, body

    def s_FunctionDef(self, node: ast.FunctionDef) -> None:
        if len(node.decorator_list) != 1:
            raise self.src.error(node, "a local function needs exactly one @R.function decorator")
        options = getattr(self.eval(node.decorator_list[0]), "kiln_script_options", None)
        if not isinstance(options, RelaxFunctionOptions):
            raise self.src.error(node.decorator_list[0], "a local function must be an @R.function")
        inner = RelaxFuncParser(self.src, self.env, self.bb, outer=self)
        func = inner.parse(node, RelaxFunctionOptions(True, options.pure, False), node.name)
        span = self.src.span(node)
        var = self.new_var(node.name, func.struct_info, span)
        self.bb.emit_normalized(VarBinding(var, func, span))
        self.scopes[-1][node.name] = var


def fill_relax_spans(root: Any, span: Any) -> None:
    """Give every expression, binding and block of a relax function without a span the span of
    its nearest enclosing node. NOTE: struct info is not entered (it is a type, not code; errors
    point at the expression or binding that carries it), which keeps this linear in the code."""
    stack: list[tuple[Any, Any]] = [(root, span)]
    while stack:
        n, outer = stack.pop()
        if isinstance(n, (tuple, list)):
            stack.extend((x, outer) for x in n)
            continue
        here = getattr(n, "span", 0)
        if here is None:
            object.__setattr__(n, "span", outer)
        elif here != 0:
            outer = here
        kids = _SPAN_FIELDS.get(type(n).__name__)
        if kids:
            stack.extend((getattr(n, f), outer) for f in kids)


_SPAN_FIELDS = {
    "Function": ("params", "body"),
    "SeqExpr": ("blocks", "body"),
    "BindingBlock": ("bindings",),
    "DataflowBlock": ("bindings",),
    "VarBinding": ("var", "value"),
    "MatchCast": ("var", "value"),
    "Call": ("op", "args"),
    "Tuple": ("fields",),
    "TupleGetItem": ("tuple_value",),
    "If": ("cond", "true_branch", "false_branch"),
}


def _object(value: Expr) -> bool:
    return type(value.struct_info).__name__ == "ObjectStructInfo"


def _assigned_name(node: ast.If) -> str:
    last = node.body[-1]
    if isinstance(last, ast.If):
        return _assigned_name(last)
    target = last.targets[0] if isinstance(last, ast.Assign) else getattr(last, "target", None)
    return target.id if isinstance(target, ast.Name) else "_"


class RelaxDialect(Dialect):
    """``@R.function`` functions."""

    name = "R.function"
    options_type = RelaxFunctionOptions

    def owns(self, func: BaseFunc) -> bool:
        return isinstance(func, Function)

    def builder(self, ctx: ModuleContext | None) -> BlockBuilder:
        if ctx is None:
            return BlockBuilder()
        bb = ctx.shared.get("relax_bb")
        if bb is None:
            bb = ctx.shared["relax_bb"] = BlockBuilder()
        return bb

    def declare(
        self, ctx: ModuleContext, fdef: ast.FunctionDef, options: Any, ev: ExprEvaluator
    ) -> Any:
        bb = self.builder(ctx)
        env = [{}, *ev.env]
        sinfo = RelaxFuncParser(ctx.src, env, bb).declared_sinfo(fdef, options)
        bb.declare_global(fdef.name, sinfo)
        return sinfo

    def parse(
        self,
        src: Source,
        fdef: ast.FunctionDef,
        env: list[Mapping[str, Any]],
        options: Any,
        ctx: ModuleContext | None,
    ) -> BaseFunc:
        bb = self.builder(ctx)
        if ctx is not None:
            for name, d in ctx.dialect_of.items():
                if d is not self:
                    bb.declare_global(name, _callee_sinfo(ctx.declared[name]))
            for name in ctx.shared.get(OUTSIDE, ()):
                bb.declare_global(name, FuncStructInfo.opaque_func(ObjectStructInfo()))
        outside = frozenset(ctx.shared.get(OUTSIDE, ())) if ctx is not None else frozenset()
        return RelaxFuncParser(src, env, bb, outside=outside).parse(fdef, options, fdef.name)

    def errors(self, obj: BaseFunc | IRModule) -> list[str]:
        return well_formed_errors(obj)


def _callee_name(value: Expr) -> str | None:
    """The module function ``value`` calls, if it is such a call."""
    if isinstance(value, Call) and isinstance(value.op, GlobalVar):
        return value.op.name_hint
    return None


def _callee_sinfo(declared: Any) -> StructInfo:
    """The struct info of a function of another dialect called directly (a PrimFunc: opaque,
    returning its scalar result, or nothing)."""
    if isinstance(declared, StructInfo):
        return declared
    dtype = getattr(declared, "dtype", None)
    ret = PrimStructInfo(dtype) if dtype is not None and not dtype.is_void else UNIT
    return FuncStructInfo.opaque_func(ret, purity=True)


RELAX = register_dialect(RelaxDialect())

__all__ = ["RELAX", "RelaxDialect", "RelaxFuncParser", "RelaxFunctionOptions"]
