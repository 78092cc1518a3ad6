"""ToNonDataflow: dataflow blocks become ordinary binding blocks.

Postcondition: no `DataflowBlock` and no `DataflowVar` remain; each dataflow variable is replaced
by an ordinary `Var` of the same name and struct info.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.transform import PassContext
from kiln.relax.binding import BindingBlock, DataflowBlock, MatchCast, VarBinding
from kiln.relax.expr import DataflowVar, Function, Var
from kiln.relax.expr_functor import ExprMutator
from kiln.relax.function_pass import FunctionPass


class _ToNonDataflow(ExprMutator):
    def visit_binding_block(self, block: BindingBlock) -> BindingBlock | None:
        if not isinstance(block, DataflowBlock):
            return super().visit_binding_block(block)
        self.builder.begin_binding_block()
        for b in block.bindings:
            self.visit_binding(b)
        return self.builder.end_block()

    def visit_binding(self, b: Any) -> None:
        value = self.visit(b.value)
        var = b.var
        if isinstance(var, DataflowVar):
            var = Var(var.name_hint, var.struct_info_, var.span)
            self.var_remap[id(b.var)] = var
        if value is b.value and var is b.var:
            self.builder.emit_normalized(b)
            return
        value = self.builder.normalize(value)
        if isinstance(b, MatchCast):
            self.builder.emit_normalized(MatchCast(var, value, b.struct_info, b.span))
        else:
            self.builder.emit_normalized(VarBinding(var, value, b.span))


@dataclass(frozen=True)
class ToNonDataflow(FunctionPass):
    """Turn dataflow blocks into binding blocks (module docstring)."""

    name: ClassVar[str] = "to-non-dataflow"

    def transform(self, gv: GlobalVar, func: Function, mod: IRModule, ctx: PassContext) -> BaseFunc:
        return _ToNonDataflow(mod).visit(func)
