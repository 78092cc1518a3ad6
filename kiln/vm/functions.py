"""What both VM code generators ask of a VM-form module: names, callees, void values.

A VM-form module (after `default_relax_pipeline`) holds graph-level functions whose bindings are
calls of packed functions (`ExternFunc`), kernels (PrimFuncs, by `GlobalVar`), other graph
functions (by `GlobalVar`) or closures (a `Var` holding a function), the operators
``call_builtin_with_ctx`` and ``null_value``, tuples, tuple items and ``If``; every shape and
prim value is constant. An `ExternFunc` naming a symbol the module's ``external_mods`` link into
the library (external C) is a kernel of that library; ``Extern=1`` functions only declare those
symbols (`is_vm_function` says which functions the code generators translate).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kiln.errors import CodegenError
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.relax.analysis.primitive import EXTERN
from kiln.relax.backend.codegen import EXTERNAL_MODS
from kiln.relax.expr import Expr, ExternFunc, Function, Var
from kiln.relax.struct_info import TupleStructInfo
from kiln.runtime.vm_format import FuncKind
from kiln.tir.function import PrimFunc


def is_vm_function(func: Any) -> bool:
    """Whether the VM code generators translate ``func``: a graph function that is not
    ``Extern=1`` (whose code is external C, a kernel of the library)."""
    return isinstance(func, Function) and not func.get_attr(EXTERN)


def linked_symbols(mod: IRModule) -> frozenset[str]:
    """The symbols of the external C the module links into its library (``external_mods``)."""
    return frozenset(ext.symbol for ext in mod.get_attr(EXTERNAL_MODS, ()))


def vm_function_name(gv: GlobalVar, func: Function) -> str:
    """The name of a graph-level function in the function table (its symbol, else its name)."""
    return func.global_symbol or gv.name_hint


def kernel_symbol(gv: GlobalVar, func: PrimFunc) -> str:
    """The exported symbol of a kernel the VM calls."""
    sym = func.global_symbol
    if sym is None:
        raise CodegenError(
            f"VM codegen: kernel {gv.name_hint!r} has no global_symbol, so the VM cannot find it "
            "in the library; run AttachGlobalSymbol first (kiln.relax.build does)"
        )
    return sym


def is_void(e: Expr) -> bool:
    """Whether ``e``'s value is ``()`` (a call made for its effect: no register)."""
    sinfo = e.struct_info_
    return isinstance(sinfo, TupleStructInfo) and not sinfo.fields


@dataclass(frozen=True)
class Callee:
    """How to call a call's ``op``: a packed function or kernel by ``name``, a graph function of
    the module by ``name``, or a closure (a value in a register)."""

    kind: str  # "packed" | "kernel" | "vm" | "closure"
    name: str = ""


def callee_of(mod: IRModule, op: Any) -> Callee:
    """The callee of a VM-form call."""
    if isinstance(op, ExternFunc):
        kind = "kernel" if op.global_symbol in linked_symbols(mod) else "packed"
        return Callee(kind, op.global_symbol)
    if isinstance(op, Var):
        return Callee("closure")
    if isinstance(op, GlobalVar):
        func = mod.functions.get(op)
        if isinstance(func, Function) and func.get_attr(EXTERN):
            kind = "kernel" if op.name_hint in linked_symbols(mod) else "packed"
            return Callee(kind, op.name_hint)
        if isinstance(func, Function):
            return Callee("vm", vm_function_name(op, func))
        if isinstance(func, PrimFunc):
            return Callee("kernel", kernel_symbol(op, func))
        if isinstance(func, ExternFunc):
            return Callee("packed", func.global_symbol)
        return Callee("packed", op.name_hint)  # defined outside the module, found by name
    raise CodegenError(f"VM codegen: cannot call {op!r} (run the VM lowering pipeline first)")


def table_entry(
    mod: IRModule, func: GlobalVar | ExternFunc, vm_kind: FuncKind
) -> tuple[str, FuncKind]:
    """(name, kind) of the function-table entry a `GlobalVar` or `ExternFunc` used as a value
    refers to."""
    callee = callee_of(mod, func)
    kinds = {"vm": vm_kind, "kernel": FuncKind.KERNEL, "packed": FuncKind.PACKED}
    return callee.name, kinds[callee.kind]
