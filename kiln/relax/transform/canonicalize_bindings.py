"""CanonicalizeBindings: remove bindings that only rename a value.

- ``y = x`` (``x`` a variable): uses of ``y`` become ``x`` and the binding goes. When ``y``
  is a block output and ``x`` a dataflow variable used only there, ``x``'s own binding defines
  ``y`` instead.
- ``y = R.match_cast(x, s)`` where ``x`` provably has struct info ``s``: the same.
- ``c = t[i]`` where ``t`` is bound to a tuple literal: ``c`` becomes that field.

Postcondition: no binding's value is a variable except outputs that must outlive a dataflow
block whose value is still used inside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.structural import structural_equal
from kiln.ir.transform import PassContext
from kiln.relax.analysis.free_vars import use_counts
from kiln.relax.analysis.struct_info import is_base_of
from kiln.relax.binding import DataflowBlock, MatchCast, VarBinding
from kiln.relax.expr import DataflowVar, Expr, Function, Tuple, TupleGetItem, Var
from kiln.relax.expr_functor import ExprMutator, ExprVisitor
from kiln.relax.function_pass import FunctionPass


class _Renames(ExprVisitor):
    """Output bindings ``gv = lv`` where ``lv`` is a dataflow var of the same block used once."""

    def __init__(self, uses: dict[int, int]) -> None:
        super().__init__()
        self.uses = uses
        self.rename: dict[int, Var] = {}
        self.drop: set[int] = set()

    def visit_binding_block(self, block: Any) -> None:
        if isinstance(block, DataflowBlock):
            here = {id(b.var) for b in block.bindings}
            for b in block.bindings:
                v = b.value
                alias = isinstance(b, VarBinding) and isinstance(v, DataflowVar)
                if alias and type(b.var) is Var and id(v) in here and self.uses.get(id(v)) == 1:
                    self.rename[id(v)] = b.var
                    self.drop.add(id(b))
        super().visit_binding_block(block)


class _Canonicalize(ExprMutator):
    def __init__(self, mod: IRModule, renames: _Renames) -> None:
        super().__init__(mod)
        self.renames = renames
        self.tuples: dict[int, Tuple] = {}

    def visit_TupleGetItem(self, t: TupleGetItem) -> Expr:
        tup = self.visit(t.tuple_value)
        known = self.tuples.get(id(tup)) if isinstance(tup, Var) else None
        if known is not None and 0 <= t.index < len(known.fields):
            return known.fields[t.index]
        return t if tup is t.tuple_value else TupleGetItem(tup, t.index, None, t.span)

    def visit_binding(self, b: Any) -> None:
        if id(b) in self.renames.drop:
            return
        value = self.visit(b.value)
        if isinstance(b, MatchCast) and isinstance(value, Var):
            sinfo = value.struct_info_
            if is_base_of(b.struct_info, sinfo) and structural_equal(b.struct_info, sinfo):
                self.alias(b, value)
                return
        if isinstance(b, VarBinding) and isinstance(value, Var) and self.can_alias(b.var, value):
            self.alias(b, value)
            return
        target = self.renames.rename.get(id(b.var))
        if target is not None:
            value = self.builder.normalize(value)
            self.var_remap[id(b.var)] = target
            self.builder.emit_normalized(VarBinding(target, value, b.span))
            return
        if isinstance(b, MatchCast):
            self.visit_match_cast(b)
        else:
            self.reemit(b, value)
            if isinstance(value, Tuple):
                self.tuples[id(self.var_remap.get(id(b.var), b.var))] = value

    def can_alias(self, y: Var, x: Var) -> bool:
        return not (type(y) is Var and isinstance(x, DataflowVar))

    def alias(self, b: Any, value: Var) -> None:
        self.var_remap[id(b.var)] = value


@dataclass(frozen=True)
class CanonicalizeBindings(FunctionPass):
    """Remove renaming bindings (module docstring)."""

    name: ClassVar[str] = "canonicalize-bindings"

    def transform(self, gv: GlobalVar, func: Function, mod: IRModule, ctx: PassContext) -> BaseFunc:
        renames = _Renames(use_counts(func))
        renames.visit(func)
        return _Canonicalize(mod, renames).visit(func)
