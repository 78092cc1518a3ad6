"""LegalizeOps: every operator call becomes a ``call_tir`` of a PrimFunc computed in TE.

Each call of an operator whose record has a ``legalize`` is replaced by
``R.call_tir(<op>, (args...), out_sinfo=<the call's struct info>)``; the PrimFunc comes from the
record's TE computation (`BlockBuilder.call_te`), and structurally equal PrimFuncs are added
once. Calls whose struct info or operands' shapes are unknown stay as they are (they cannot be
computed in TE), as do builtins (``call_tir``, ``call_packed``, ``shape_of``...).

Postcondition: the module holds the new private PrimFuncs beside the rewritten functions;
``Extern=1`` functions (their C comes from an external codegen) are left as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kiln.ir.module import IRModule
from kiln.ir.transform import Pass, PassContext
from kiln.relax.analysis.primitive import EXTERN
from kiln.relax.expr import Call, Expr, Function, Tuple, TupleGetItem, Var
from kiln.relax.expr_functor import ExprMutator
from kiln.relax.op.registry import find_op_def
from kiln.relax.struct_info import TensorStructInfo, TupleStructInfo, is_te_ready


def _arg_ok(arg: Any) -> bool:
    if isinstance(arg, Tuple):
        return all(_arg_ok(f) for f in arg.fields)
    sinfo = arg.struct_info_ if isinstance(arg, Expr) else None
    return not isinstance(sinfo, (TensorStructInfo, TupleStructInfo)) or is_te_ready(sinfo)


class _Legalizer(ExprMutator):
    def visit_Call(self, c: Call) -> Expr:
        call = self.builder.normalize(super().visit_Call(c))
        rec = find_op_def(call.op)
        if rec is None or rec.legalize is None:
            return call
        if not is_te_ready(call.struct_info_) or not all(_arg_ok(a) for a in call.args):
            return call
        legalize = rec.legalize

        def compute(*te_args: Any) -> Any:
            return legalize(call, list(te_args))

        short = rec.name.split(".")[-1]
        args = [self.fields_of(a) for a in call.args]
        return self.builder.call_te(
            compute, *args, primfunc_name_hint=short, out_sinfo=call.struct_info
        )

    def fields_of(self, arg: Any) -> Any:
        """A tuple-valued variable as a tuple of its fields (bound to variables of their own),
        so that TE sees one tensor per field."""
        sinfo = arg.struct_info_ if isinstance(arg, Var) else None
        if not isinstance(sinfo, TupleStructInfo):
            return arg
        items = (TupleGetItem(arg, i) for i in range(len(sinfo.fields)))
        return Tuple(tuple(self.builder.normalize_arg(self.fields_of(i)) for i in items))


@dataclass(frozen=True)
class LegalizeOps(Pass):
    """Replace operator calls by ``call_tir`` of TE-computed PrimFuncs (module docstring)."""

    name: ClassVar[str] = "legalize-ops"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        mut = _Legalizer(mod)
        changed = {}
        for gv, func in mod.items():
            if isinstance(func, Function) and not func.get_attr(EXTERN):
                new = mut.visit(func)
                if new is not func:
                    changed[gv] = new
        if not changed:
            return mod
        return mut.builder.get().update_all(changed)
