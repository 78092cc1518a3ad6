"""`FunctionPass` for graph-level functions (the relax counterpart of `PrimFuncPass`)."""

from __future__ import annotations

from typing import ClassVar

from kiln.ir.transform import FunctionPass as _FunctionPass
from kiln.relax.expr import Function


class FunctionPass(_FunctionPass):
    """Base of relax passes that rewrite each `Function` of a module on its own.

    Subclass it as a frozen dataclass and implement ``transform(gv, func, mod, ctx)``; PrimFuncs
    pass through untouched and an unchanged module is returned as it was.
    """

    function_type: ClassVar[type] = Function
