"""RenameSymbolicDims: give the symbolic dims of graph-level functions the names users know.

A frontend names a symbolic dim as its source does (torch.export calls them ``s0``, ``s77``);
the user knows it by another name (the ``torch.export.Dim("batch")`` they declared). The pass
replaces each `tir.Var` named in ``names`` by a fresh var with the new name everywhere in the
function: struct info, shapes, PrimValues, match casts. A dim is bound by var identity, so every
occurrence of one old var becomes the same new var (`MemoMutator`). PrimFuncs keep their own
vars.

Postcondition: the function's signature (``model.inputs``) and the checks on its inputs use the
new names. A new name that another var of the function already has is an error naming both.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from kiln.errors import PassError
from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.transform import PassContext
from kiln.ir.visitor import MemoMutator, distinct_nodes
from kiln.relax.expr import Function
from kiln.relax.function_pass import FunctionPass
from kiln.tir.expr import Var as TirVar


class _Rename(MemoMutator):
    """Replaces tir vars by name; relax nodes above a renamed var are rebuilt once each."""

    def __init__(self, names: dict[str, str]) -> None:
        super().__init__()
        self.names = names

    def visit_Var(self, n: Any) -> Any:
        new = self.names.get(n.name) if isinstance(n, TirVar) else None
        if new is None or new == n.name:
            return self.generic_visit(n)
        return replace(n, name=new)


@dataclass(frozen=True)
class RenameSymbolicDims(FunctionPass):
    """Rename symbolic dims (tir vars) of graph-level functions (module docstring)."""

    name: ClassVar[str] = "rename-symbolic-dims"
    names: tuple[tuple[str, str], ...] = ()
    """(old name, new name) pairs."""

    def transform(self, gv: GlobalVar, func: Function, mod: IRModule, ctx: PassContext) -> BaseFunc:
        names = dict(self.names)
        if not names:
            return func
        present = {n.name for n in distinct_nodes(func) if isinstance(n, TirVar)}
        for old, new in names.items():
            if old in present and new in present and new not in names:
                raise PassError(
                    self.name,
                    f"cannot rename symbolic dim {old!r} of {gv.name_hint!r} to {new!r}: the "
                    f"function has another var named {new!r}; pick another name",
                )
        return _Rename(names).visit(func)
