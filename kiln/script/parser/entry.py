"""Entry points: ``@T.prim_func``, ``@R.function``, ``@I.ir_module`` and `from_source`.

Decorated definitions are re-read from their file (found through the code object) and parsed
from the AST, so spans carry the real file name, line and column. Names resolve, in order, in
the function's closure cells, the locals of the frame that applied the decorator (captured at
decoration time), the function's globals and Python's builtins. The decorator's options select
the dialect that parses the function (`kiln.script.parser.dialect`).

A decorated function inside a class body is not parsed on the spot: ``I.ir_module`` parses the
whole class once it exists, so functions can call each other as ``Module.callee(...)``. Accessed
through a class that is not an ``I.ir_module``, such a function is parsed on first access.
"""

from __future__ import annotations

import ast
import inspect
import os
import sys
import types
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kiln.errors import ScriptError
from kiln.ir.function import BaseFunc
from kiln.ir.module import IRModule
from kiln.script._boundary import PSEUDO_FILE, entry_point
from kiln.script.metadata import NAME as METADATA_NAME
from kiln.script.metadata import MetadataTable
from kiln.script.parser import core as _tir_dialect  # noqa: F401 - registers the T dialect
from kiln.script.parser import relax_func as _relax_dialect  # noqa: F401 - registers R
from kiln.script.parser.core import PrimFuncOptions
from kiln.script.parser.dialect import (
    ModuleOptions,
    check_well_formed,
    dialect_for,
    dialect_names,
    function_options,
    parse_class,
)
from kiln.script.parser.expr import ExprEvaluator
from kiln.script.parser.relax_func import RelaxFunctionOptions
from kiln.script.parser.source import (
    Source,
    find_class,
    find_function,
    source_from_text,
    source_of_file,
)

_SCRIPT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_frame() -> types.FrameType | None:
    """The innermost frame outside kiln.script (the one that applied a decorator)."""
    frame = sys._getframe(1)
    while frame is not None:
        fname = frame.f_code.co_filename
        if fname != PSEUDO_FILE and not os.path.abspath(fname).startswith(_SCRIPT_DIR):
            return frame
        frame = frame.f_back  # type: ignore[assignment]
    return None


def closure_vars(func: types.FunctionType) -> dict[str, Any]:
    """The values of ``func``'s closure cells (empty cells left out)."""
    out: dict[str, Any] = {}
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or ()):
        try:
            out[name] = cell.cell_contents
        except ValueError:
            continue
    return out


def parse_function(
    src: Source, fdef: ast.FunctionDef, env: list[Mapping[str, Any]], options: Any
) -> BaseFunc:
    """A standalone function from a top-level ``def`` (its dialect chosen by ``options``)."""
    dialect = dialect_for(options)
    assert dialect is not None
    func = dialect.parse(src, fdef, env, options, None)
    if options.check_well_formed:
        check_well_formed(src, fdef, func)
    return func


def parse_python_function(
    func: types.FunctionType, options: Any, captured: list[Mapping[str, Any]]
) -> BaseFunc:
    """A function from a decorated Python function."""
    code = func.__code__
    src = source_of_file(code.co_filename, func.__globals__)
    fdef = find_function(src, func.__name__, code.co_firstlineno)
    env = [closure_vars(func), *captured, func.__globals__]
    return parse_function(src, fdef, env, options)


class DeferredFunction:
    """A decorated function met in a class body: parsed by ``I.ir_module`` (or on access)."""

    def __init__(self, func: types.FunctionType, options: Any, captured: list[dict]) -> None:
        self.func, self.options, self.captured = func, options, captured
        self.parsed: BaseFunc | None = None

    def __get__(self, obj: Any, owner: Any = None) -> BaseFunc:
        if self.parsed is None:
            self.parsed = _parse_deferred(self)
        return self.parsed


DeferredPrimFunc = DeferredFunction


@entry_point
def _parse_deferred(d: DeferredFunction) -> BaseFunc:
    return parse_python_function(d.func, d.options, d.captured)


def _in_class_body(func: types.FunctionType) -> bool:
    parts = func.__qualname__.split(".")
    return len(parts) > 1 and parts[-2] != "<locals>"


def decorate(func: Any, options: Any) -> Any:
    """Apply a dialect decorator (its options given) to ``func``."""
    if not isinstance(func, types.FunctionType):
        name = dialect_for(options).name  # type: ignore[union-attr]
        raise TypeError(f"@{name} decorates a function, got {func!r}")
    frame = user_frame()
    here = dict(frame.f_locals) if frame is not None else {}
    if _in_class_body(func):
        outer = frame.f_back if frame is not None else None
        return DeferredFunction(func, options, [here, dict(outer.f_locals) if outer else {}])
    return parse_python_function(func, options, [here])


class FunctionDecorator:
    """What ``T.prim_func(private=True)`` / ``R.function(pure=False)`` return."""

    def __init__(self, options: Any) -> None:
        self.kiln_script_options = options

    @entry_point
    def __call__(self, func: Any) -> Any:
        return decorate(func, self.kiln_script_options)


def _flags(what: str, **flags: Any) -> None:
    """Refuse a decorator flag that is not a bool (``pure=3`` would print back as ``True``)."""
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise TypeError(f"@{what}: {name}= must be True or False, got {value!r}")


@entry_point
def prim_func(
    func: Any = None,
    *,
    private: bool = False,
    check_well_formed: bool = True,
    **_ignored: Any,
) -> Any:
    """``@T.prim_func`` / ``@T.prim_func(private=True)``: parse a function into a `PrimFunc`.

    Other TVMScript keywords (``s_tir=...``) are accepted and ignored.
    """
    _flags("T.prim_func", private=private, check_well_formed=check_well_formed)
    options = PrimFuncOptions(private, check_well_formed)
    if func is None:
        return FunctionDecorator(options)
    return decorate(func, options)


prim_func.kiln_script_options = PrimFuncOptions()  # type: ignore[attr-defined]


@entry_point
def function(
    func: Any = None,
    *,
    private: bool = False,
    pure: bool = True,
    check_well_formed: bool = True,
) -> Any:
    """``@R.function`` / ``@R.function(private=True, pure=False)``: parse a graph-level
    function into a relax `Function`."""
    _flags("R.function", private=private, pure=pure, check_well_formed=check_well_formed)
    options = RelaxFunctionOptions(private, pure, check_well_formed)
    if func is None:
        return FunctionDecorator(options)
    return decorate(func, options)


function.kiln_script_options = RelaxFunctionOptions()  # type: ignore[attr-defined]


def parse_python_class(
    cls: type, options: ModuleOptions, captured: list[Mapping[str, Any]]
) -> IRModule:
    """An `IRModule` from a class decorated with ``@I.ir_module``."""
    deferred = [v for v in vars(cls).values() if isinstance(v, DeferredFunction)]
    if deferred:
        filename = deferred[0].func.__code__.co_filename
        module_globals = deferred[0].func.__globals__
    else:
        module_globals = vars(sys.modules[cls.__module__])
        filename = inspect.getsourcefile(cls) or "<unknown>"
    src = source_of_file(filename, module_globals)
    cdef = find_class(src, cls, [d.func.__code__.co_firstlineno for d in deferred])
    closures: dict[str, Any] = {}
    for d in deferred:
        closures.update(closure_vars(d.func))
    return parse_class(src, cdef, [closures, *captured, module_globals], options)


class IRModuleDecorator:
    """What ``I.ir_module(check_well_formed=False)`` returns."""

    def __init__(self, options: ModuleOptions) -> None:
        self.kiln_ir_module_options = options

    @entry_point
    def __call__(self, cls: Any) -> IRModule:
        return _decorate_class(cls, self.kiln_ir_module_options)


def _decorate_class(cls: Any, options: ModuleOptions) -> IRModule:
    if not isinstance(cls, type):
        raise TypeError(f"@I.ir_module decorates a class, got {cls!r}")
    frame = user_frame()
    return parse_python_class(cls, options, [dict(frame.f_locals) if frame else {}])


@entry_point
def ir_module(cls: Any = None, *, check_well_formed: bool = True) -> Any:
    """``@I.ir_module``: parse a class of script functions into an `IRModule`."""
    _flags("I.ir_module", check_well_formed=check_well_formed)
    options = ModuleOptions(check_well_formed)
    if cls is None:
        return IRModuleDecorator(options)
    return _decorate_class(cls, options)


ir_module.kiln_ir_module_options = ModuleOptions()  # type: ignore[attr-defined]


NAMESPACES: dict[str, Any] = {}
"""What a script's ``T``, ``I`` and ``R`` are: the namespaces `kiln.script` registers when it
loads (`register_namespaces`; they import this parser, so it cannot import them)."""


def register_namespaces(**namespaces: Any) -> None:
    """Set the names every parsed script has predefined (``T=tir, I=ir, R=relax``)."""
    NAMESPACES.update(namespaces)


@entry_point
def from_source(
    text: str,
    source_name: str = "<script>",
    extra_vars: Mapping[str, Any] | None = None,
    check_well_formed: bool = True,
    metadata: Mapping[str, Any] | str | None = None,
    partial: bool = False,
) -> IRModule | BaseFunc:
    """Parse script text holding one ``@I.ir_module`` class or one decorated function.

    ``T``, ``R`` and ``I`` are predefined; ``extra_vars`` adds names the script may use.
    Passing ``check_well_formed=False`` skips verification (it overrides the decorators').
    ``metadata`` is the section the text's ``metadata["relax.Constant"][i]`` references read
    (the dict the printer filled, or `load_metadata`), or ``"placeholder"`` to read a dump
    without it: zero-filled constants of the printed shapes and dtypes (`kiln.script.metadata`).
    ``partial=True`` reads a module that calls functions it does not define (what
    ``KILN_DEBUG=2`` prints after a pass: the functions it changed), unchecked.
    """
    src = source_from_text(text, source_name)
    module_env: dict[str, Any] = {}
    table = MetadataTable(metadata)
    predefined = {**NAMESPACES, METADATA_NAME: table}
    env = [module_env, dict(extra_vars or {}), predefined]
    ev = ExprEvaluator(src, env)
    results: list[IRModule | BaseFunc] = []
    for stmt in src.tree.body:
        results.extend(_top_level(src, ev, stmt, env, module_env, check_well_formed, partial))
    if len(results) != 1:
        raise ScriptError(None, f"from_source expects one module or function, found {len(results)}")
    return results[0]


def assign_python(ev: ExprEvaluator, target: ast.expr, value: Any, env: dict[str, Any]) -> None:
    """Bind a module- or class-level Python assignment (``N = 16``, ``M, K = 16, 32``)."""
    if isinstance(target, ast.Name):
        env[target.id] = value
        return
    if isinstance(target, (ast.Tuple, ast.List)):
        if not isinstance(value, (tuple, list)):
            raise ev.src.error(target, f"cannot unpack {type(value).__name__} {value!r}")
        values = list(value)
        if len(values) != len(target.elts):
            raise ev.src.error(target, f"cannot unpack {len(values)} values into this target")
        for t, v in zip(target.elts, values):
            assign_python(ev, t, v, env)
        return
    raise ev.src.error(target, f"cannot assign to {ast.unparse(target)} here")


def _top_level(
    src: Source,
    ev: ExprEvaluator,
    stmt: ast.stmt,
    env: list[Mapping[str, Any]],
    module_env: dict[str, Any],
    check: bool,
    partial: bool = False,
) -> list[IRModule | BaseFunc]:
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return []  # the printed header; T, R and I are predefined
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return []
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        assign_python(ev, stmt.targets[0], ev.eval(stmt.value), module_env)
        return []
    if isinstance(stmt, ast.FunctionDef):
        _, opts = function_options(ev, stmt)
        if not check:
            opts = replace(opts, check_well_formed=False)
        return [parse_function(src, stmt, env, opts)]
    if isinstance(stmt, ast.ClassDef) and len(stmt.decorator_list) == 1:
        deco = ev.eval(stmt.decorator_list[0])
        options = getattr(deco, "kiln_ir_module_options", None)
        if isinstance(options, ModuleOptions):
            options = ModuleOptions(options.check_well_formed and check, partial)
            return [parse_class(src, stmt, env, options)]
    raise src.error(stmt, f"expected an @I.ir_module class or a {dialect_names()} function")
