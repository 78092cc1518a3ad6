"""Simplify: every integer expression of every PrimFunc rewritten by `kiln.arith`.

Precondition: a well-formed module (any stage of the pipeline; kiln runs it after
`LegalizeStorage`, so it sees the flat indices and the typed signatures).
Postcondition: each expression of a function body is replaced by the `kiln.arith` simplification
of it under what the enclosing statements establish (`kiln.arith.simplify_stmt`): loop
variables range over their loops, ``let`` variables over their values' bounds, thread indices
over their extents, conditions hold in their branches; a symbolic dimension an exposed
function's entry binds from a tensor's shape is non-negative. An ``if`` whose condition becomes
constant is replaced by the branch taken. Declarations (buffers, loop and let variables) are
untouched, so every binder keeps its identity; a function with nothing to simplify comes back
as the same object.

Values are preserved exactly: at every point where the original evaluates without signed
overflow, so does the result, to the same value (`kiln.arith.simplify` refuses any rewrite that
could introduce an overflow). Example: an index ``(f // 64) * 1024 + (f % 64) * 16 + i`` with
``f`` in ``[0, 4096)`` and ``i`` in ``[0, 16)`` becomes ``f * 16 + i``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kiln.arith import simplify_stmt
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.transform import PassContext
from kiln.tir.attrs import PACKED_API
from kiln.tir.function import PrimFunc, PrimFuncPass
from kiln.tir.packed_api import PackedAPI


@dataclass(frozen=True)
class Simplify(PrimFuncPass):
    """Simplify the integer arithmetic of every function body (see the module docstring)."""

    name: ClassVar[str] = "simplify"

    def transform(self, gv: GlobalVar, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        api = func.get_attr(PACKED_API)
        bounds = api.dim_bounds if isinstance(api, PackedAPI) else {}
        return simplify_stmt(func, bounds)
