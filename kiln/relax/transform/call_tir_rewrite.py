"""CallTIRRewrite: destination-passing calls become an explicit output allocation and a call.

``y = R.call_tir(f, (a, b), out_sinfo)`` (and ``R.call_lowered(f, (a, b), out_sinfo, ...)``,
what `LowerTE` writes) becomes

    y = R.builtin.alloc_tensor(shape, dtype, 0)      # one allocation per output
    _ = f(a, b, y)                                   # a call of the kernel, returning nothing

and every use of ``y`` reads the allocation (a tuple of them for several outputs; ``y[i]`` reads
the i-th allocation). A ``call_tir`` with ``tir_vars`` passes them through
``vm.builtin.call_tir_dyn(f, a, b, y, shape)``, which appends the shape's values as int
arguments. ``R.call_dps_packed(g, (a,), out_sinfo)`` becomes a call of the packed function
``g(a, y)``. Output shapes may be symbolic (`VMShapeLower` computes them later).

A ``call_lowered`` of an ``Extern=1`` function (external C, see `LowerTE`) calls the symbol of
that function, ``ExternFunc("<name>")(a, b, y)``: the VM finds it in the library when the
module's ``external_mods`` link it there, else by name. Output dims must be known (symbolic is
fine): a ``call_lowered`` of unknown result dims gets them from its shape function first
(`CallShapeFunctions`).

Postcondition: no ``call_tir``, ``call_lowered`` and ``call_dps_packed`` remain; ``Extern=1``
functions are left as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kiln.errors import PassError
from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.op import Op
from kiln.ir.transform import PassContext
from kiln.relax.analysis.primitive import EXTERN
from kiln.relax.binding import VarBinding
from kiln.relax.expr import Call, Expr, ExternFunc, Function, Tuple, TupleGetItem, Var
from kiln.relax.expr_functor import ExprMutator
from kiln.relax.function_pass import FunctionPass
from kiln.relax.op.builtin import alloc_tensor
from kiln.relax.struct_info import UNIT, TensorStructInfo, TupleStructInfo
from kiln.runtime.vm_builtins import builtin

DPS_OPS = ("relax.call_tir", "relax.call_dps_packed", "relax.call_lowered")
"""The destination-passing operators this pass rewrites."""

CALL_TIR_DYN = builtin("call_tir_dyn").name
PASS = "CallTIRRewrite"


class _Rewriter(ExprMutator):
    def __init__(self, mod: IRModule) -> None:
        super().__init__(mod)
        self.mod = mod

    def visit_var_binding(self, b: VarBinding) -> None:
        call = b.value
        if not (isinstance(call, Call) and isinstance(call.op, Op) and call.op.name in DPS_OPS):
            super().visit_var_binding(b)
            return
        call = self.visit(call)
        outs = self.allocate_outputs(call, b.var)
        self.builder.emit(self.kernel_call(call, [*self.arg_fields(call.args[1]), *outs]), "_")
        result: Expr = outs[0] if len(outs) == 1 else Tuple(tuple(outs))
        self.var_remap[id(b.var)] = self.builder.normalize(result)

    def kernel_call(self, call: Call, args: list[Expr]) -> Call:
        """The call of ``call``'s callee with its inputs, then its outputs."""
        callee = call.args[0]
        if call.op.name == "relax.call_dps_packed":
            return Call(callee, tuple(args), sinfo_args=(UNIT,))
        if call.op.name == "relax.call_lowered" and self.is_extern(callee):
            return Call(ExternFunc(callee.name_hint), tuple(args), sinfo_args=(UNIT,))
        if len(call.args) == 3:  # call_tir with tir_vars
            items = (callee, *args, call.args[2])
            return Call(ExternFunc(CALL_TIR_DYN), items, sinfo_args=(UNIT,))
        return Call(callee, tuple(args))

    def visit_TupleGetItem(self, t: TupleGetItem) -> Expr:
        """An item of a multi-output call reads its allocation directly."""
        new = super().visit_TupleGetItem(t)
        if isinstance(new, TupleGetItem) and isinstance(new.tuple_value, Tuple):
            return new.tuple_value.fields[new.index]
        return new

    def is_extern(self, gv: Any) -> bool:
        func = self.mod.functions.get(gv) if isinstance(gv, GlobalVar) else None
        return isinstance(func, Function) and bool(func.get_attr(EXTERN))

    def allocate_outputs(self, call: Call, var: Var) -> list[Var]:
        outs = []
        for hint, f in _output_fields(call, var):
            if f.dims is None:
                fix = (
                    "run CallShapeFunctions first"
                    if "prim_shape_fn_var" in call.attrs
                    else "give the call known dims, or lower it with LowerTE"
                )
                raise PassError(
                    PASS, f"output {hint!r} of {call.op.name} has unknown dims ({f}); fix: {fix}"
                )
            outs.append(self.builder.emit(alloc_tensor(list(f.dims), f.dtype), hint))
        return outs

    def arg_fields(self, args: Expr) -> list[Expr]:
        """The arguments of a destination-passing call, one per field of its argument tuple."""
        if isinstance(args, Tuple):
            return list(args.fields)
        sinfo = args.struct_info_
        assert isinstance(sinfo, TupleStructInfo)  # call_tir's infer checked it
        items = (TupleGetItem(args, i) for i in range(len(sinfo.fields)))
        return [self.builder.normalize_arg(item) for item in items]


def _output_fields(call: Call, var: Var) -> list[tuple[str, TensorStructInfo]]:
    """(name hint, struct info) of each output of a destination-passing call."""
    sinfo = call.sinfo_args[0]
    fields = sinfo.fields if isinstance(sinfo, TupleStructInfo) else (sinfo,)
    out = []
    for i, f in enumerate(fields):
        assert isinstance(f, TensorStructInfo)  # the ops' infer checked it
        out.append((var.name_hint if len(fields) == 1 else f"{var.name_hint}_{i}", f))
    return out


@dataclass(frozen=True)
class CallTIRRewrite(FunctionPass):
    """Explicit output allocation for destination-passing calls (module docstring)."""

    name: ClassVar[str] = "call-tir-rewrite"

    def transform(self, gv: GlobalVar, func: Function, mod: IRModule, ctx: PassContext) -> BaseFunc:
        if func.get_attr(EXTERN):
            return func
        return _Rewriter(mod).visit(func)
