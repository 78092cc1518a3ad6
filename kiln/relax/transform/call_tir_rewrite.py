"""CallTIRRewrite: destination-passing calls become an explicit output allocation and a call.

``y = R.call_tir(f, (a, b), out_sinfo)`` becomes

    y = R.builtin.alloc_tensor(shape, dtype, 0)      # one allocation per output
    _ = f(a, b, y)                                   # a call of the PrimFunc, returning nothing

and every use of ``y`` reads the allocation (a tuple of them for several outputs; ``y[i]`` reads
the i-th allocation). A call with
``tir_vars`` passes them through ``vm.builtin.call_tir_dyn(f, a, b, y, shape)``, which appends
the shape's values as int arguments. ``R.call_dps_packed(g, (a,), out_sinfo)`` becomes a call
of the packed function ``g(a, y)``. Output shapes may be symbolic (`VMShapeLower` computes
them later).

Postcondition: no ``call_tir`` and no ``call_dps_packed`` remain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.op import Op
from kiln.ir.transform import PassContext
from kiln.relax.binding import VarBinding
from kiln.relax.expr import Call, Expr, ExternFunc, Function, Tuple, TupleGetItem, Var
from kiln.relax.expr_functor import ExprMutator
from kiln.relax.function_pass import FunctionPass
from kiln.relax.op.builtin import alloc_tensor
from kiln.relax.struct_info import UNIT, TensorStructInfo, TupleStructInfo
from kiln.runtime.vm_builtins import builtin

DPS_OPS = ("relax.call_tir", "relax.call_dps_packed")
"""The destination-passing operators this pass rewrites. NOTE: ``relax.call_lowered`` (what
LowerTE writes) joins them when it lands, rewritten like ``call_tir``."""

CALL_TIR_DYN = builtin("call_tir_dyn").name


class _Rewriter(ExprMutator):
    def visit_var_binding(self, b: VarBinding) -> None:
        call = b.value
        if not (isinstance(call, Call) and isinstance(call.op, Op) and call.op.name in DPS_OPS):
            super().visit_var_binding(b)
            return
        call = self.visit(call)
        outs = self.allocate_outputs(call, b.var)
        args = [*self.arg_fields(call.args[1]), *outs]
        if call.op.name == "relax.call_dps_packed":
            self.builder.emit(Call(call.args[0], tuple(args), sinfo_args=(UNIT,)), "_")
        elif len(call.args) == 3:
            dyn_args = (call.args[0], *args, call.args[2])
            dyn = Call(ExternFunc(CALL_TIR_DYN), dyn_args, sinfo_args=(UNIT,))
            self.builder.emit(dyn, "_")
        else:
            self.builder.emit(Call(call.args[0], tuple(args)), "_")
        result: Expr = outs[0] if len(outs) == 1 else Tuple(tuple(outs))
        self.var_remap[id(b.var)] = self.builder.normalize(result)

    def visit_TupleGetItem(self, t: TupleGetItem) -> Expr:
        """An item of a multi-output call reads its allocation directly."""
        new = super().visit_TupleGetItem(t)
        if isinstance(new, TupleGetItem) and isinstance(new.tuple_value, Tuple):
            return new.tuple_value.fields[new.index]
        return new

    def allocate_outputs(self, call: Call, var: Var) -> list[Var]:
        sinfo = call.sinfo_args[0]
        fields = sinfo.fields if isinstance(sinfo, TupleStructInfo) else (sinfo,)
        outs = []
        for i, f in enumerate(fields):
            assert isinstance(f, TensorStructInfo) and f.dims is not None  # call_tir's infer
            hint = var.name_hint if len(fields) == 1 else f"{var.name_hint}_{i}"
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


@dataclass(frozen=True)
class CallTIRRewrite(FunctionPass):
    """Explicit output allocation for destination-passing calls (module docstring)."""

    name: ClassVar[str] = "call-tir-rewrite"

    def transform(self, gv: GlobalVar, func: Function, mod: IRModule, ctx: PassContext) -> BaseFunc:
        return _Rewriter(mod).visit(func)
