"""AttachGlobalSymbol: every PrimFunc gets an exported symbol, so the VM can find it.

A private PrimFunc (``LegalizeOps`` and ``VMShapeLower`` make them) is given its `GlobalVar`'s
name as ``global_symbol``: the library then exports it and the VM's kernel table names it.
Graph-level functions keep what they have (a private one is known by its name in the function
table). Two functions claiming one symbol is an error naming both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kiln.errors import PassError
from kiln.ir.module import IRModule
from kiln.ir.transform import Pass, PassContext
from kiln.tir.function import PrimFunc


@dataclass(frozen=True)
class AttachGlobalSymbol(Pass):
    """Give private PrimFuncs their name as exported symbol (module docstring)."""

    name: ClassVar[str] = "attach-global-symbol"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        owners: dict[str, str] = {}
        changed = {}
        for gv, func in mod.items():
            sym = func.global_symbol
            if sym is None and isinstance(func, PrimFunc):
                sym = gv.name_hint
                changed[gv] = func.with_attr("global_symbol", sym)
            if sym is None:
                sym = gv.name_hint
            if sym in owners:
                raise PassError(
                    "AttachGlobalSymbol",
                    f"{owners[sym]!r} and {gv.name_hint!r} would both be "
                    f"exported as {sym!r}; rename one of them",
                )
            owners[sym] = gv.name_hint
        return mod.update_all(changed) if changed else mod
