"""LowerTE: primitive functions become scheduled PrimFuncs (or external C), and their calls
become ``relax.call_lowered``.

In every graph function that is not itself primitive, external or a ``Compiler`` function, a
call is one of six forms:

1. a call of a function with ``Primitive=1`` and no ``Compiler`` -- a module function, a local
   (let-bound) function or an inline one, called once or many times: the function is lowered
   through TE (`kiln.relax.backend.te_compiler`: the records' legalizations, scheduled by
   `kiln.topi.schedule_for` for ``target``) into one global PrimFunc named
   ``<module_name>_fused_<op>_<op>...`` (a ``_1``, ``_2`` suffix only when a different function
   would take the same name); structurally equal primitives share one PrimFunc (a cache keyed by
   structural hash and target); the call is rewritten to the lowered form;
2. ``Primitive=1`` and ``Compiler="<name>"``: the external codegen registered as ``<name>``
   (`kiln.relax.backend.codegen`) is called once with the function; the C it returns is added to
   the module attribute ``external_mods``; the function stays in the module as a graph
   ``Function`` with ``Extern=1`` under its ``global_symbol`` (or a fresh
   ``<module_name>_<name>`` symbol), and the call is rewritten to the lowered form of it;
3. a call of a function with ``Extern=1``: rewritten to the lowered form; the function is kept;
4. a call of a PrimFunc of the module whose result is tensors (``sinfo_args``): rewritten;
5. a ``call_lowered`` already: unchanged (running LowerTE twice changes nothing);
6. a call of a plain graph function: unchanged.

The lowered form is ``R.call_lowered(callee, (args...), out_sinfo=<the call's struct info>,
func_attrs=<the original function's attributes>, all_prim_fn_vars=[<its PrimFuncs>])``; when
the result has unknown dims (``R.Tensor(ndim=2)``), a host shape function ``shape_func_<ops>``
(compiled for the host target whatever ``target`` is) is added and cross-linked through
``prim_shape_fn_var``, ``prim_shape_fn_states``, ``prim_shape_fn_num_inputs``,
``prim_shape_fn_num_outputs`` and ``all_prim_shape_fn_vars``. A primitive whose shapes use a
symbolic variable no parameter has as a plain dim (``n`` when a parameter is
``R.Tensor((n * 2, 32))``) gets it as a scalar PrimFunc parameter, and the call passes it as
``tir_vars=R.shape([n])`` (the primitive was outlined from its caller, so ``n`` is the caller's).

Each lowered PrimFunc carries the ``target`` attribute and the span of the function it came from;
one of constant shapes also its work, ``kiln.cost`` (`kiln.relax.analysis.cost`), and one
whose calls name model nodes (a frontend's `NodeSpan`) the names of those nodes, ``kiln.nodes``
(`NODES`), gathered over every call site that shares it; so does each ``Extern=1`` function an
external codegen made.
Module-level primitive functions whose calls were all lowered are removed. Errors (no codegen, a
codegen that fails, an operator without a legalization, an opaque call inside a primitive) are
`PassError`s naming the function, the operator and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from kiln.errors import PassError
from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.op import Op
from kiln.ir.structural import structural_equal, structural_hash
from kiln.ir.target import Target
from kiln.ir.transform import Pass, PassContext
from kiln.relax.analysis.cost import COST, function_cost
from kiln.relax.analysis.free_vars import all_global_vars
from kiln.relax.analysis.primitive import COMPILER, EXTERN, PRIMITIVE, fused_name, is_lowerable
from kiln.relax.backend.codegen import (
    EXTERNAL_MODS,
    SYMBOL_PREFIX,
    CSource,
    ExternalSource,
    get_codegen,
    list_codegens,
)
from kiln.relax.backend.te_compiler import (
    is_dims_param,
    is_dynamic,
    lower_primitive,
    op_names,
    op_records,
    shape_function,
    symbolic_vars,
)
from kiln.relax.binding import VarBinding
from kiln.relax.block_builder import BlockBuilder
from kiln.relax.expr import Call, Function, ShapeExpr, Tuple, Var
from kiln.relax.expr_functor import ExprMutator, ExprVisitor
from kiln.relax.normalizer import func_struct_info
from kiln.relax.op.builtin import call_lowered
from kiln.relax.struct_info import FuncStructInfo, StructInfo, TensorStructInfo, TupleStructInfo
from kiln.tir.function import PrimFunc

PASS = "lower-te"

NODES = "kiln.nodes"
"""The kernel attribute naming the model nodes (ONNX or FX node names, in call order, each once)
whose operators the kernel (or external function) computes, over all its call sites. They are
the model's, not the kernel's: `kiln.driver.relax_build` records them and drops them before the
kernel cache's key."""


class _NodeNames(ExprVisitor):
    """The node names of the calls of a function (their spans' ``node``), each once, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.names: dict[str, None] = {}

    def visit_Call(self, c: Call) -> None:
        node = _node_of(c)
        if node:
            self.names[node] = None
        super().visit_Call(c)


def _node_of(c: Call) -> str:
    # NOTE: duck-typed: the frontends' `NodeSpan` lives above this layer
    return str(getattr(c.span, "node", "") or "")


class _CalleeUses(ExprVisitor):
    """How often each variable is used, and how often as a callee."""

    def __init__(self) -> None:
        super().__init__()
        self.uses: dict[int, int] = {}
        self.calls: dict[int, int] = {}

    def visit_Var(self, v: Var) -> None:
        self.uses[id(v)] = self.uses.get(id(v), 0) + 1

    def visit_Call(self, c: Call) -> None:
        if isinstance(c.op, Var):
            self.calls[id(c.op)] = self.calls.get(id(c.op), 0) + 1
        super().visit_Call(c)


def _tensors_only(sinfo: StructInfo | None) -> bool:
    if isinstance(sinfo, TensorStructInfo):
        return True
    return isinstance(sinfo, TupleStructInfo) and all(_tensors_only(f) for f in sinfo.fields)


class _Cache:
    """Functions by structure and target: equal functions get the same value."""

    def __init__(self) -> None:
        self._items: dict[tuple[int, str], list[tuple[BaseFunc, Any]]] = {}

    def get(self, func: BaseFunc, target: str) -> Any:
        for f, v in self._items.get((structural_hash(func), target), []):
            if structural_equal(f, func):
                return v
        return None

    def put(self, func: BaseFunc, target: str, value: Any) -> None:
        self._items.setdefault((structural_hash(func), target), []).append((func, value))


class _Lowerer(ExprMutator):
    def __init__(self, mod: IRModule, module_name: str, target: Target) -> None:
        super().__init__(mod)
        self.mod, self.module_name, self.target = mod, module_name, target
        self.host = target.host_target()
        self.prims, self.shapes, self.externs = _Cache(), _Cache(), _Cache()
        self.externals: list[ExternalSource] = []
        self.extern_gvs: dict[str, GlobalVar] = {}
        self.lowered_globals: set[str] = set()
        self.local: dict[int, Function] = {}
        self.callee_only: set[int] = set()
        self.caller: Function | None = None
        self.caller_name = ""
        self.nodes: dict[GlobalVar, dict[str, None]] = {}

    # -- traversal -------------------------------------------------------------------------------
    def lower_function(self, name: str, func: Function) -> Function:
        uses = _CalleeUses()
        uses.visit(func)
        self.callee_only = {k for k, n in uses.calls.items() if uses.uses.get(k) == n}
        self.caller, self.caller_name = func, name
        out = self.visit(func)
        assert isinstance(out, Function)
        return out

    def visit_var_binding(self, b: VarBinding) -> None:
        f = b.value
        if isinstance(f, Function) and (f.get_attr(PRIMITIVE) or f.get_attr(EXTERN)):
            self.local[id(b.var)] = f
            if id(b.var) in self.callee_only:
                return  # every use is a call, and every call is rewritten
        super().visit_var_binding(b)

    def visit_Call(self, c: Call) -> Any:
        if isinstance(c.op, Op):
            return super().visit_Call(c)
        func, where = self.resolve(c.op)
        if func is None:
            return super().visit_Call(c)
        args = tuple(self.visit(a) for a in c.args)
        sinfo = c.struct_info_ or self.derive(c, func, args)
        if isinstance(func, PrimFunc):
            if not isinstance(c.op, GlobalVar) or not _tensors_only(sinfo):
                return super().visit_Call(c)
            return self.lowered(c, func, c.op, args, sinfo, [c.op], where)
        if func.get_attr(EXTERN):
            gv = c.op if isinstance(c.op, GlobalVar) else self.extern_global(func, where)
            return self.lowered(c, func, gv, args, sinfo, [], where)
        if not func.get_attr(PRIMITIVE):
            return super().visit_Call(c)
        if isinstance(c.op, GlobalVar):
            self.lowered_globals.add(c.op.name_hint)
        if func.get_attr(COMPILER):
            ext = self.external(func, where)
            self.note_nodes(ext, func, c)
            return self.lowered(c, func, ext, args, sinfo, [], where)
        gv, positions = self.primitive(func, where)
        self.note_nodes(gv, func, c)
        # NOTE: a ``dims`` parameter's variables reach the kernel as ``tir_vars`` below
        args = tuple(a for a, p in zip(args, func.params) if not is_dims_param(p))
        tir_vars = None
        if positions:
            # NOTE: a primitive is outlined from its caller, so its variables are the caller's
            # (an equal primitive's are at the same positions).
            order = symbolic_vars(func)
            tir_vars = ShapeExpr([order[k] for k in positions])
        return self.lowered(c, func, gv, args, sinfo, [gv], where, tir_vars)

    def resolve(self, op: Any) -> tuple[BaseFunc | None, str]:
        """The function a callee names, and how to name it in errors."""
        if isinstance(op, GlobalVar):
            func = self.mod[op] if op in self.mod else None
            return func, f"function {op.name_hint!r}"
        if isinstance(op, Var):
            func = self.local.get(id(op))
            return func, f"local function {op.name_hint!r} in {self.caller_name!r}"
        if isinstance(op, Function):
            if op.body.struct_info_ is None:  # an inline function is not normalized with its caller
                op = BlockBuilder().normalize(op)
            return op, f"inline function in {self.caller_name!r}"
        return None, ""

    def derive(self, c: Call, func: BaseFunc, args: tuple[Any, ...]) -> StructInfo:
        fsinfo = func_struct_info(func)
        assert isinstance(fsinfo, FuncStructInfo)
        return self.builder.derive_call(replace(c, args=args, struct_info_=None), fsinfo)

    # -- the lowered call ------------------------------------------------------------------------
    def lowered(
        self,
        c: Call,
        func: BaseFunc,
        callee: GlobalVar,
        args: tuple[Any, ...],
        sinfo: StructInfo,
        prim_vars: list[GlobalVar],
        where: str,
        tir_vars: ShapeExpr | None = None,
    ) -> Call:
        extra: dict[str, Any] = {}
        if is_dynamic(sinfo):
            if not isinstance(func, Function):
                raise PassError(
                    PASS,
                    f"the call of PrimFunc {callee.name_hint!r} has a result "
                    f"of unknown shape ({sinfo}); fix: give the call's sinfo_args "
                    "known dims",
                    c,
                )
            gv, sf = self.shape_func(func, where)
            extra = {
                "prim_shape_fn_var": gv,
                "prim_shape_fn_states": sf.states,
                "prim_shape_fn_num_inputs": sf.num_inputs,
                "prim_shape_fn_num_outputs": sf.num_outputs,
                "all_prim_shape_fn_vars": [gv],
            }
        out = call_lowered(
            callee, Tuple(args), sinfo, func.attrs, prim_vars, tir_vars=tir_vars, **extra
        )
        return replace(out, span=c.span)

    def primitive(self, func: Function, where: str) -> tuple[GlobalVar, list[int]]:
        """The PrimFunc of ``func`` and the positions of its ``tir_vars`` (`lower_primitive`)."""
        key = func.without_attr("global_symbol")
        hit = self.prims.get(key, str(self.target))
        if hit is None:
            name = fused_name(f"{self.module_name}_fused", op_names(func))
            prim, positions = lower_primitive(func, self.target, name, where)
            cost = function_cost(func)
            if cost is not None:
                prim = prim.with_attr(COST, list(cost))
            if prim.span is None and self.caller is not None:
                prim = replace(prim, span=self.caller.span)
            gv = self.builder.add_func(prim, name)
            # NOTE: exported under its module name now (what AttachGlobalSymbol would give it),
            # so the passes after this one leave the kernel's object as it is
            self.builder.update_func(gv, prim.with_attr("global_symbol", gv.name_hint))
            hit = (gv, positions)
            self.prims.put(key, str(self.target), hit)
        return hit

    def note_nodes(self, gv: GlobalVar, func: Function, c: Call) -> None:
        """Add the node names of this call site (its primitive's calls, else the call itself)
        to kernel ``gv``'s: equal primitives share the kernel, so each site adds its own."""
        names = _NodeNames()
        names.visit(func)
        found = names.names or ({_node_of(c): None} if _node_of(c) else {})
        if found:
            self.nodes.setdefault(gv, {}).update(found)

    def shape_func(self, func: Function, where: str) -> Any:
        hit = self.shapes.get(func, str(self.host))
        if hit is None:
            op_records(func, where)
            name = fused_name("shape_func", op_names(func))
            sf = shape_function(func, name, self.host, where)
            prim = (
                sf.prim
                if sf.prim.span is not None or self.caller is None
                else (replace(sf.prim, span=self.caller.span))
            )
            hit = (self.builder.add_func(prim, name), sf)
            self.shapes.put(func, str(self.host), hit)
        return hit

    # -- external functions ----------------------------------------------------------------------
    def external(self, func: Function, where: str) -> GlobalVar:
        hit = self.externs.get(func, "")
        if hit is None:
            compiler = str(func.get_attr(COMPILER))
            symbol = func.global_symbol
            if symbol is not None and not symbol.isidentifier():
                raise PassError(
                    PASS, f"{where}: global_symbol {symbol!r} is not a C identifier; fix: rename it"
                )
            hit = self.extern_global(func, where, symbol or f"{self.module_name}_{compiler}")
            symbol = hit.name_hint
            named = func.with_attr("global_symbol", symbol)
            source = self.run_codegen(named, compiler, symbol, where)
            if source is not None:
                ext = ExternalSource(symbol, compiler, source.source, source.flags)
                self.externals.append(ext)
            self.externs.put(func, "", hit)
        return hit

    def run_codegen(self, func: Function, compiler: str, symbol: str, where: str) -> Any:
        codegen = get_codegen(compiler)
        if codegen is None:
            raise PassError(
                PASS,
                f"{where} has Compiler={compiler!r}, but no external codegen is registered under "
                f"that name (registered: {list_codegens()}); fix: register one with "
                f"kiln.relax.register_codegen({compiler!r})",
            )
        try:
            result = codegen(func)
        except Exception as e:
            raise PassError(
                PASS,
                f"external codegen {compiler!r} failed on {where}: "
                f"{type(e).__name__}: {e}; fix: the codegen, or partition differently "
                "so the function holds what it supports",
            ) from e
        if result is None:
            return None
        if isinstance(result, str):
            result = CSource(result)
        if not isinstance(result, CSource) or not isinstance(result.source, str):
            raise PassError(
                PASS,
                f"external codegen {compiler!r} returned {type(result).__name__} "
                f"for {where}; fix: return C source (a str or "
                "kiln.relax.backend.CSource) or None",
            )
        if f"{SYMBOL_PREFIX}{symbol}" not in result.source:
            raise PassError(
                PASS,
                f"external codegen {compiler!r} returned source for {where} "
                f"that does not define {SYMBOL_PREFIX}{symbol}; fix: export that "
                "tvm-ffi entry",
            )
        return result

    def extern_global(self, func: Function, where: str, name: str | None = None) -> GlobalVar:
        """The module function holding ``func`` marked ``Extern=1``: under ``func``'s
        ``global_symbol`` exactly, else under a fresh name based on ``name``."""
        attrs = {EXTERN: 1}
        extern = Function(
            func.params, func.body, func.ret_struct_info, func.is_pure, attrs, None, func.span
        )
        symbol = func.global_symbol
        if symbol is None:
            return self.builder.add_func(extern, name or f"{self.module_name}_extern")
        existing = self.builder.lookup_function(GlobalVar(symbol))
        if existing is None:
            gv = self.builder.add_func(extern, symbol)
            self.extern_gvs[symbol] = gv
            return gv
        gv = self.extern_gvs.get(symbol)
        if gv is None and symbol in self.mod:
            gv = self.mod.get_global_var(symbol)
        ok = existing is func or isinstance(existing, Function) and existing.get_attr(EXTERN)
        if gv is None or not ok:
            raise PassError(
                PASS,
                f"{where}: its symbol {symbol!r} names another function of the module; fix: "
                "rename one of them",
            )
        self.builder.update_func(gv, extern)
        self.extern_gvs[symbol] = gv
        return gv

    # -- the module ------------------------------------------------------------------------------
    def finish(self, mod: IRModule) -> IRModule:
        """Drop lowered module-level primitives nothing calls any more; record external C and
        each kernel's node names."""
        if self.nodes:
            named = {gv: mod[gv].with_attr(NODES, list(n)) for gv, n in self.nodes.items()}
            mod = mod.update_all(named)
        refs: set[str] = set()
        for f in mod.functions.values():
            if isinstance(f, Function) and not f.get_attr(PRIMITIVE):
                refs.update(g.name_hint for g in all_global_vars(f))
        for name in sorted(self.lowered_globals):
            if name in mod and name not in refs and mod[name].get_attr(PRIMITIVE):
                mod = mod.remove(name)
        if self.externals:
            known = tuple(mod.get_attr(EXTERNAL_MODS, ()))
            mod = mod.with_attr(EXTERNAL_MODS, known + tuple(self.externals))
        return mod


@dataclass(frozen=True)
class LowerTE(Pass):
    """Lower primitive functions and rewrite their calls (see the module docstring)."""

    module_name: str = "default"
    target: Any = "c"
    name: ClassVar[str] = "lower-te"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        target = Target.from_any(self.target)
        if not target.is_host_kind and target.host is None:  # a device kernel has a host side
            target = target.with_host(target.host_target())
        low = _Lowerer(mod, self.module_name, target)
        changed = {}
        for gv, func in mod.items():
            if is_lowerable(func):
                new = low.lower_function(gv.name_hint, func)  # type: ignore[arg-type]
                if new is not func:
                    changed[gv] = new
        if not changed and not low.externals:
            return mod
        return low.finish(low.builder.get().update_all(changed))


__all__ = ["NODES", "LowerTE"]
