"""Dialects of script functions, and the parsing of an ``@I.ir_module`` class.

A function's decorator (``@T.prim_func``, ``@R.function``) carries an options object
(``kiln_script_options``); its type selects the `Dialect` that parses the function. A module is
parsed in two passes: every function first *declares* itself (a `GlobalVar` and what callers
need to know: a PrimFunc's return dtype, a relax function's signature), then each is parsed, so
functions call each other in any order. Adding a dialect adds a `Dialect` subclass and its
registration; the module parser and the entry points do not change.
"""

from __future__ import annotations

import ast
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.module import IRModule
from kiln.script.parser.expr import ExprEvaluator, ModuleRef
from kiln.script.parser.source import Source


@dataclass(frozen=True)
class ModuleOptions:
    """Options of ``@I.ir_module(...)``."""

    check_well_formed: bool = True
    partial: bool = False
    """``from_source(..., partial=True)``: ``Module.f`` of a function the text does not define
    is a fresh `GlobalVar` ``f`` (a printed dump leaves out functions that did not change); the
    module is then not checked, as its calls may name functions it does not hold."""


@dataclass(frozen=True)
class ModuleAttrs:
    """``I.module_attrs({...})`` inside an ``I.ir_module`` class."""

    attrs: dict


@dataclass
class ModuleContext:
    """What the functions of one module share while it is parsed."""

    src: Source
    gvars: dict[str, GlobalVar] = field(default_factory=dict)
    dialect_of: dict[str, Dialect] = field(default_factory=dict)
    declared: dict[str, Any] = field(default_factory=dict)
    shared: dict[str, Any] = field(default_factory=dict)


class Dialect(ABC):
    """How functions of one script dialect are declared, parsed and checked."""

    name: str = ""
    options_type: type = object

    @abstractmethod
    def declare(
        self, ctx: ModuleContext, fdef: ast.FunctionDef, options: Any, ev: ExprEvaluator
    ) -> Any:
        """What callers of ``fdef`` need to know before it is parsed (stored by the module)."""

    @abstractmethod
    def parse(
        self,
        src: Source,
        fdef: ast.FunctionDef,
        env: list[Mapping[str, Any]],
        options: Any,
        ctx: ModuleContext | None,
    ) -> BaseFunc:
        """The function ``fdef`` (in module ``ctx``, or standalone when ``ctx`` is None)."""

    @abstractmethod
    def owns(self, func: BaseFunc) -> bool:
        """Whether ``func`` is a function of this dialect."""

    @abstractmethod
    def errors(self, obj: BaseFunc | IRModule) -> list[str]:
        """Well-formedness problems of a parsed function, or of this dialect's functions in a
        module (empty when well formed)."""


_DIALECTS: list[Dialect] = []


def register_dialect(d: Dialect) -> Dialect:
    _DIALECTS.append(d)
    return d


def dialect_for(options: Any) -> Dialect | None:
    for d in _DIALECTS:
        if isinstance(options, d.options_type):
            return d
    return None


def dialect_names() -> str:
    return " or ".join(f"@{d.name}" for d in _DIALECTS)


def function_options(ev: ExprEvaluator, fdef: ast.FunctionDef) -> tuple[Dialect, Any]:
    """The dialect and options of the single decorator of ``fdef``."""
    if len(fdef.decorator_list) != 1:
        first, *rest = [f"@{d.name}" for d in _DIALECTS]
        more = f" (or {' or '.join(rest)})" if rest else ""
        raise ev.src.error(
            fdef, f"function {fdef.name!r} needs exactly one {first} decorator{more}"
        )
    deco = ev.eval(fdef.decorator_list[0])
    options = getattr(deco, "kiln_script_options", None)
    dialect = dialect_for(options)
    if dialect is None:
        raise ev.src.error(
            fdef.decorator_list[0], f"a script function is decorated with {dialect_names()}"
        )
    return dialect, options


def check_well_formed(src: Source, node: ast.AST, obj: BaseFunc | IRModule) -> None:
    """Raise a `ScriptError` at ``node`` when the parsed IR breaks an invariant."""
    errors: list[str] = []
    for d in _DIALECTS:
        if isinstance(obj, IRModule):
            if any(d.owns(f) for _, f in obj.items()):
                errors.extend(d.errors(obj))
        elif d.owns(obj):
            errors.extend(d.errors(obj))
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise src.error(node, f"the parsed IR is not well formed: {errors[0]}{more}")


OUTSIDE = "outside"
"""`ModuleContext.shared` key: the functions a partial module calls but does not define."""


def _outside_names(cdef: ast.ClassDef, defined: Mapping[str, Any]) -> list[str]:
    """The ``cls.f`` / ``Module.f`` names in ``cdef`` that no function of it defines."""
    owners = {cdef.name, "cls"}
    found = {
        n.attr
        for n in ast.walk(cdef)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in owners
    }
    return sorted(found - set(defined))


def parse_class(
    src: Source, cdef: ast.ClassDef, env: list[Mapping[str, Any]], options: ModuleOptions
) -> IRModule:
    """An `IRModule` from an ``@I.ir_module`` class statement."""
    class_env: dict[str, Any] = {}
    ev = ExprEvaluator(src, [class_env, *env])
    funcs: list[tuple[ast.FunctionDef, Dialect, Any]] = []
    attrs: dict[str, Any] = {}
    for stmt in cdef.body:
        if isinstance(stmt, ast.FunctionDef):
            funcs.append((stmt, *function_options(ev, stmt)))
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # docstring
        elif isinstance(stmt, ast.Expr) and isinstance(v := ev.eval(stmt.value), ModuleAttrs):
            attrs.update(v.attrs)
        elif isinstance(stmt, ast.Assign) and [type(t) for t in stmt.targets] == [ast.Name]:
            class_env[stmt.targets[0].id] = ev.eval(stmt.value)  # type: ignore[attr-defined]
        elif not isinstance(stmt, ast.Pass):
            raise src.error(
                stmt,
                f"an I.ir_module class holds {dialect_names()} functions and I.module_attrs(...)",
            )
    ctx = ModuleContext(src)
    for fdef, dialect, _ in funcs:
        if fdef.name in ctx.gvars:
            raise src.error(fdef, f"function {fdef.name!r} is defined twice")
        ctx.gvars[fdef.name] = GlobalVar(fdef.name, src.span(fdef))
        ctx.dialect_of[fdef.name] = dialect
    for fdef, dialect, opts in funcs:
        ctx.declared[fdef.name] = dialect.declare(ctx, fdef, opts, ev)
    if options.partial:
        ctx.shared[OUTSIDE] = _outside_names(cdef, ctx.gvars)
        ctx.gvars.update((n, GlobalVar(n)) for n in ctx.shared[OUTSIDE])
    fenv = [{cdef.name: ModuleRef(cdef.name, ctx.gvars)}, class_env, *env, dict(ctx.gvars)]
    out = {ctx.gvars[f.name]: d.parse(src, f, fenv, o, ctx) for f, d, o in funcs}
    mod = ev.at(cdef, IRModule, out, attrs)
    if options.check_well_formed and not options.partial:
        check_well_formed(src, cdef, mod)
    return mod
