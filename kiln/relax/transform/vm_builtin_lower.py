"""VMBuiltinLower: the remaining graph-level builtins become calls of VM builtins.

- ``R.builtin.alloc_tensor(shape, dtype, dev)`` -> ``vm.builtin.empty(ctx, shape, dtype, dev)``
  (a tensor with storage of its own: what escapes a function);
- ``R.memory.alloc_storage(size, dev, scope, dtype)`` -> ``vm.builtin.alloc_storage(ctx, size,
  dev, dtype, scope)``; ``R.memory.alloc_tensor(s, offset, shape, dtype)`` ->
  ``vm.builtin.alloc_tensor(s, offset, shape, dtype)``;
- ``R.shape_of(x)`` -> ``vm.builtin.shape_of(x)``;
- ``R.call_pure_packed(f, args...)`` -> ``f(args...)``.

Builtins that take the VM context are written ``R.call_builtin_with_ctx``; the others are calls
of an `ExternFunc`. Every name comes from the runtime's builtin table
(`kiln.runtime.vm_builtins`). Any other operator left at this point has no VM lowering: the
pass names it and the pass that should have removed it.

Postcondition: the only operators left are ``call_builtin_with_ctx`` and ``null_value``
(``Extern=1`` functions, whose C comes from an external codegen, are left as they are).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from kiln.errors import PassError
from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.op import Op
from kiln.ir.transform import PassContext
from kiln.relax.analysis.primitive import EXTERN
from kiln.relax.expr import Call, Expr, ExternFunc, Function
from kiln.relax.expr_functor import ExprMutator
from kiln.relax.function_pass import FunctionPass
from kiln.relax.op.vm import call_builtin_with_ctx
from kiln.runtime.vm_builtins import builtin

VM_OPS = ("relax.call_builtin_with_ctx", "relax.null_value")
"""The operators VM-form functions may call (the VM code generators emit them)."""


def _name(short: str) -> str:
    return builtin(short).name


def _empty(c: Call) -> Expr:
    shape, dtype, dev = c.args
    return call_builtin_with_ctx(_name("empty"), (shape, dtype, dev), c.struct_info)


def _alloc_storage(c: Call) -> Expr:
    size, dev, scope, dtype = c.args
    return call_builtin_with_ctx(_name("alloc_storage"), (size, dev, dtype, scope), c.struct_info)


def _alloc_tensor(c: Call) -> Expr:
    return Call(ExternFunc(_name("alloc_tensor")), c.args, sinfo_args=(c.struct_info,))


def _shape_of(c: Call) -> Expr:
    return Call(ExternFunc(_name("shape_of")), c.args, sinfo_args=(c.struct_info,))


def _pure_packed(c: Call) -> Expr:
    return Call(c.args[0], c.args[1:], sinfo_args=(c.struct_info,))


LOWERINGS: dict[str, Callable[[Call], Expr]] = {
    "relax.builtin.alloc_tensor": _empty,
    "relax.memory.alloc_storage": _alloc_storage,
    "relax.memory.alloc_tensor": _alloc_tensor,
    "relax.shape_of": _shape_of,
    "relax.call_pure_packed": _pure_packed,
}
"""operator name -> its VM builtin form."""

_BEFORE = {
    "relax.call_tir": "CallTIRRewrite",
    "relax.call_dps_packed": "CallTIRRewrite",
    "relax.call_lowered": "CallTIRRewrite",
}


class _Lower(ExprMutator):
    def visit_Call(self, c: Call) -> Expr:
        call = super().visit_Call(c)
        if not isinstance(call, Call) or not isinstance(call.op, Op) or call.op.name in VM_OPS:
            return call
        call = self.builder.normalize(call)
        lower = LOWERINGS.get(call.op.name)
        if lower is None:
            needs = _BEFORE.get(call.op.name, "LegalizeOps (or FuseOps + LowerTE)")
            raise PassError(
                "VMBuiltinLower",
                f"{call.op.name} has no VM lowering; {needs} should have "
                "replaced it (see default_relax_pipeline in kiln/driver/pipeline.py)",
            )
        return lower(call)


@dataclass(frozen=True)
class VMBuiltinLower(FunctionPass):
    """Graph-level builtins to VM builtin calls (module docstring)."""

    name: ClassVar[str] = "vm-builtin-lower"

    def transform(self, gv: GlobalVar, func: Function, mod: IRModule, ctx: PassContext) -> BaseFunc:
        if func.get_attr(EXTERN):
            return func
        return _Lower(mod).visit(func)
