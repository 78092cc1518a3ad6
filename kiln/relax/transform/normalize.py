"""Normalize: every relax function in normal form with struct info everywhere.

Fills the struct info of hand-built expressions from the operator records and binds nested calls
to variables of their own (A-normal form), as `BlockBuilder.normalize` does. Shape and dtype
mistakes are reported here, naming the operator and operands. A function already normal comes
back as the same object.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.transform import PassContext
from kiln.relax.block_builder import BlockBuilder
from kiln.relax.expr import Function
from kiln.relax.function_pass import FunctionPass


@dataclass(frozen=True)
class Normalize(FunctionPass):
    """Struct info and A-normal form for every relax function (module docstring)."""

    name: ClassVar[str] = "relax-normalize"

    def transform(self, gv: GlobalVar, func: Function, mod: IRModule, ctx: PassContext) -> BaseFunc:
        return BlockBuilder(mod).normalize(func)
