"""`FunctionPass` for graph-level functions (the relax counterpart of `PrimFuncPass`)."""

from __future__ import annotations

from typing import Any, ClassVar

from kiln import config
from kiln.ir.transform import FunctionPass as _FunctionPass
from kiln.ir.transform import PassContext
from kiln.relax.analysis.well_formed import verify_module
from kiln.relax.expr import Function


class FunctionPass(_FunctionPass):
    """Base of relax passes that rewrite each `Function` of a module on its own.

    Subclass it as a frozen dataclass and implement ``transform(gv, func, mod, ctx)``; PrimFuncs
    pass through untouched and an unchanged module is returned as it was.
    """

    function_type: ClassVar[type] = Function


def debug_pass_context(**kwargs: Any) -> PassContext:
    """A `PassContext` for graph-level pipelines with the instruments of ``KILN_DEBUG``: 1
    verifies every function of the module after each pass (`verify_module`: TIR and relax
    functions alike), 2 also prints the functions each pass changed (`KILN_PRINT_AFTER` and
    `KILN_PRINT_FUNCS` select passes and functions)."""

    cfg = config.load()
    return PassContext.for_debug_level(
        cfg.debug,
        verify=verify_module,
        print_after=cfg.print_after,
        print_funcs=cfg.print_funcs,
        **kwargs,
    )
