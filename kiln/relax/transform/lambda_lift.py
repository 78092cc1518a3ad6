"""LambdaLift: local functions become module functions; those that capture become closures.

A local function ``f = R.function(...)`` bound inside ``outer`` is added to the module as the
private function ``outer_f`` whose parameters are the variables it captures, then its own. The
binding becomes ``f = vm.builtin.make_closure(outer_f, captured...)``, which the VM calls as
``outer_f(*captured, *args)`` (calls through ``f`` stay calls of a closure); a local function
that captures nothing is replaced by ``outer_f`` itself, so its calls become direct calls.
Nested local functions are lifted innermost first.

Postcondition: no `Function` is nested inside another (``Extern=1`` functions, whose C comes
from an external codegen, are left as they are).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kiln.errors import PassError
from kiln.ir.module import IRModule
from kiln.ir.transform import Pass, PassContext
from kiln.ir.visitor import pre_order_nodes
from kiln.relax.analysis.free_vars import free_vars
from kiln.relax.analysis.primitive import EXTERN
from kiln.relax.binding import VarBinding
from kiln.relax.expr import Call, ExternFunc, Function, Var
from kiln.relax.expr_functor import ExprMutator
from kiln.runtime.vm_builtins import builtin

MAKE_CLOSURE = builtin("make_closure").name


class _Lift(ExprMutator):
    def __init__(self, mod: IRModule, prefix: str) -> None:
        super().__init__(mod)
        self.prefix = prefix

    def visit_var_binding(self, b: VarBinding) -> None:
        if not isinstance(b.value, Function):
            super().visit_var_binding(b)
            return
        inner = self.visit(b.value)
        captured = free_vars(inner)
        if any(v is b.var for v in captured):
            raise PassError(
                "LambdaLift",
                f"local function {b.var.name_hint!r} of {self.prefix} calls itself; "
                "recursive local functions are not supported (make it a module function)",
            )
        lifted = self.lift(inner, captured)
        gv = self.builder.add_func(lifted, f"{self.prefix}_{b.var.name_hint}")
        if not captured:
            self.var_remap[id(b.var)] = gv
            return
        closure = Call(ExternFunc(MAKE_CLOSURE), (gv, *captured), sinfo_args=(inner.struct_info,))
        self.reemit(b, closure)

    def lift(self, inner: Function, captured: list[Var]) -> Function:
        """``inner`` with the captured variables as leading parameters (fresh variables)."""
        params = [Var(v.name_hint, v.struct_info_, v.span) for v in captured]
        rename = ExprMutator()
        rename.var_remap = {id(old): new for old, new in zip(captured, params)}
        body = rename.visit_with_new_scope(inner.body, (*params, *inner.params))
        attrs = inner.attrs.without("global_symbol")
        func = Function((*params, *inner.params), body, inner.ret_struct_info, inner.is_pure, attrs)
        return self.builder.normalize(func)


@dataclass(frozen=True)
class LambdaLift(Pass):
    """Lift local functions to the module (module docstring)."""

    name: ClassVar[str] = "lambda-lift"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        out = mod
        for gv, func in list(mod.items()):
            if not isinstance(func, Function) or func.get_attr(EXTERN):
                continue
            if not _has_local_function(func):
                continue
            lift = _Lift(out, func.global_symbol or gv.name_hint)
            new = lift.visit(func)
            out = lift.builder.get().update(gv, new)
        return out


def _has_local_function(func: Function) -> bool:
    return any(isinstance(n, Function) and n is not func for n in pre_order_nodes(func.body))
