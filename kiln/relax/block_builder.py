"""`BlockBuilder`: build graph-level functions binding by binding, in normal form.

    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            lv = bb.emit(relax.op.add(x, y))
            gv = bb.emit_output(relax.op.nn.relu(lv))
        bb.emit_func_output(gv)
    mod = bb.get()

Every `emit` normalizes its value first (`Normalizer`): struct info comes from the operator
records and a mistake (mismatched shapes, a wrong dtype) is raised there, naming the operator and
its operands. `call_te` / `emit_te` turn a TE function (a `kiln.topi` operator or a lambda over
``te.compute``) into a private PrimFunc of the module and a ``call_tir`` of it; structurally
equal PrimFuncs are added once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kiln.errors import IRError, IRValueError
from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.names import NameSupply
from kiln.ir.node import as_attrs
from kiln.ir.structural import structural_equal, structural_hash
from kiln.relax.analysis.struct_info import Fit, check_fits, tir_vars
from kiln.relax.binding import MatchCast, VarBinding
from kiln.relax.expr import DataflowVar, Expr, Function, SeqExpr, ShapeExpr, Tuple, Var
from kiln.relax.normalizer import Normalizer
from kiln.relax.op.builtin import call_tir
from kiln.relax.op.common import describe
from kiln.relax.struct_info import StructInfo
from kiln.relax.te_bridge import (
    TEArgs,
    as_tensors,
    has_symbolic_dims,
    out_struct_info,
    prim_func_of,
)
from kiln.tir.function import PrimFunc


@dataclass
class _FuncFrame:
    name: str
    params: list[Var] | None
    attrs: dict[str, Any]
    pure: bool
    private: bool
    done: bool = False


class BlockBuilder(Normalizer):
    """Builds functions into a module (see the module docstring)."""

    def __init__(self, mod: IRModule | None = None) -> None:
        super().__init__()
        self._funcs: dict[str, tuple[GlobalVar, BaseFunc]] = {}
        self._mod_attrs = dict(mod.attrs) if mod is not None else {}
        for gv, f in mod.items() if mod is not None else ():
            self._funcs[gv.name_hint] = (gv, f)
        self._names = NameSupply(self._funcs)
        self._func: _FuncFrame | None = None
        self._te_cache: dict[int, list[GlobalVar]] = {}

    # -- the module ------------------------------------------------------------------------------
    def lookup_function(self, gv: GlobalVar) -> BaseFunc | None:
        hit = self._funcs.get(gv.name_hint)
        return hit[1] if hit is not None else None

    def add_func(self, func: BaseFunc, func_name: str) -> GlobalVar:
        """Add ``func`` under a fresh name based on ``func_name``; returns its GlobalVar."""
        for gv, f in self._funcs.values():
            if f is func:
                return gv
        name = self._names.fresh(func_name)
        gv = GlobalVar(name)
        self._funcs[name] = (gv, func)
        return gv

    def update_func(self, gv: GlobalVar, func: BaseFunc) -> None:
        """Replace the function of ``gv``."""
        if gv.name_hint not in self._funcs:
            raise IRError(f"update_func: the module has no function {gv.name_hint!r}")
        self._funcs[gv.name_hint] = (self._funcs[gv.name_hint][0], func)

    def get(self) -> IRModule:
        """The module built so far."""
        if self._func is not None and not self._func.done:
            raise IRError(f"function {self._func.name!r} is still being built")
        return IRModule({gv: f for gv, f in self._funcs.values()}, self._mod_attrs)

    # -- functions and blocks --------------------------------------------------------------------
    @contextmanager
    def function(
        self,
        name: str,
        params: Any = None,
        attrs: dict[str, Any] | None = None,
        pure: bool = True,
        private: bool = False,
    ) -> Iterator[None]:
        """Build function ``name``; end it with `emit_func_output`."""
        if self._func is not None:
            raise IRError(f"cannot start function {name!r} inside function {self._func.name!r}")
        plist = None if params is None else _param_list(params)
        frame = _FuncFrame(name, plist, dict(attrs or {}), pure, private)
        self._func = frame
        self.begin_scope(plist or ())
        try:
            yield
            if not frame.done:
                raise IRError(f"function {name!r} ended without emit_func_output")
        finally:
            self._func = None
            if not frame.done:
                self._scopes[1:] = []

    @contextmanager
    def dataflow(self) -> Iterator[None]:
        """A dataflow block: pure bindings; `emit_output` marks what the block exports."""
        if self._func is None:
            raise IRError("a dataflow block must be inside bb.function(...)")
        if self.current_block_is_dataflow():
            raise IRError("dataflow blocks cannot be nested")
        self.begin_dataflow_block()
        yield
        self.begin_binding_block()

    def emit(self, expr: Any, name_hint: str = "") -> Var:
        """Bind ``expr`` (normalized) to a new variable of the current block."""
        value = self.normalize(_as_value(expr))
        if isinstance(value, Function):
            value = self.normalize(value)
        hint = name_hint or ("lv" if self.current_block_is_dataflow() else "gv")
        return self._emit_value(value, hint)

    def emit_output(self, output: Any, name_hint: str = "") -> Var:
        """Bind ``output`` to a variable visible after the current dataflow block."""
        if not self.current_block_is_dataflow():
            raise IRError("emit_output is only allowed inside a dataflow block")
        value = self.normalize(_as_value(output))
        var = Var(name_hint or "gv", value.struct_info_, value.span)
        self.emit_normalized(VarBinding(var, value, value.span))
        return var

    def match_cast(self, value: Any, struct_info: StructInfo, name_hint: str = "") -> Var:
        """Bind ``value`` checked against ``struct_info`` (defining its new symbolic vars)."""
        v = self.normalize(_as_value(value))
        if check_fits(struct_info, v.struct_info_) is Fit.FAIL:
            raise IRValueError(f"match_cast can never succeed: {describe(v)} as {struct_info}")
        cls = DataflowVar if self.current_block_is_dataflow() else Var
        var = cls(name_hint or ("lv" if cls is DataflowVar else "gv"), struct_info, v.span)
        self.emit_normalized(MatchCast(var, v, struct_info, v.span))
        return var

    def emit_func_output(self, output: Any, params: Any = None) -> GlobalVar:
        """End the current function with result ``output``; returns its GlobalVar."""
        frame = self._func
        if frame is None:
            raise IRError("emit_func_output outside bb.function(...)")
        if self.current_block_is_dataflow():
            raise IRError("emit_func_output inside a dataflow block; leave the block first")
        if params is not None:
            if frame.params is not None:
                raise IRError(f"function {frame.name!r} already has parameters")
            frame.params = _param_list(params)
            self._scopes[-1].sym.update(id(v) for p in frame.params for v in _sym(p.struct_info_))
        if frame.params is None:
            raise IRError(f"function {frame.name!r} has no parameters list")
        body = self.normalize_arg(_as_value(output))
        blocks = self.end_scope()
        attrs = dict(frame.attrs)
        if not frame.private:
            attrs.setdefault("global_symbol", frame.name)
        seq = SeqExpr(tuple(blocks), body)
        func = Function(tuple(frame.params), seq, None, frame.pure, as_attrs(attrs))
        func = self.normalize(func)
        frame.done = True
        self._scopes[1:] = []
        return self.add_func(func, frame.name)

    # -- tensor expressions ----------------------------------------------------------------------
    def call_te(
        self,
        func: Callable[..., Any],
        *args: Any,
        primfunc_name_hint: str | None = None,
        out_sinfo: StructInfo | None = None,
        **kwargs: Any,
    ) -> Expr:
        """``call_tir`` of a new PrimFunc computing ``func(*args, **kwargs)`` in TE."""
        values = [self.normalize(a) if isinstance(a, Expr) else a for a in args]
        exprs = [v for v in [*values, *kwargs.values()] if isinstance(v, Expr)]
        conv = TEArgs(has_symbolic_dims(*exprs, *([out_sinfo] if out_sinfo else [])))
        te_args = [conv.convert(v) for v in values]
        te_kwargs = {k: conv.convert(v) for k, v in kwargs.items()}
        outs = as_tensors(func(*te_args, **te_kwargs))
        name = primfunc_name_hint or getattr(func, "__name__", "te_func").strip("_<>") or "te_func"
        prim, tir_vars = prim_func_of([ph for _, ph in conv.inputs], outs, name)
        gv = self._add_prim_func(prim, name)
        sinfo = out_sinfo if out_sinfo is not None else out_struct_info(outs)
        inputs = [e for e, _ in conv.inputs]
        extra = ShapeExpr(tir_vars) if tir_vars else None
        return call_tir(gv, Tuple(tuple(inputs)), sinfo, extra)

    def emit_te(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Var:
        """`emit` of `call_te`."""
        name_hint = kwargs.pop("name_hint", "")
        return self.emit(self.call_te(func, *args, **kwargs), name_hint)

    def _add_prim_func(self, prim: PrimFunc, name: str) -> GlobalVar:
        key = structural_hash(prim)
        for gv in self._te_cache.get(key, []):
            if structural_equal(self._funcs[gv.name_hint][1], prim):
                return gv
        gv = self.add_func(prim, name)
        self._te_cache.setdefault(key, []).append(gv)
        return gv


def _sym(sinfo: Any) -> list[Any]:

    return tir_vars(sinfo)


def _param_list(params: Any) -> list[Var]:
    items = [params] if isinstance(params, Var) else list(params)
    for p in items:
        if not isinstance(p, Var) or p.struct_info_ is None:
            raise IRError(f"function parameters must be Vars with struct info, got {p!r}")
    return items


def _as_value(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return Tuple(tuple(_as_value(v) for v in value))
    return value
