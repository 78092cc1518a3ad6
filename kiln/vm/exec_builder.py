"""`ExecBuilder`: collects an executable's function table, constants and bytecode.

The VM code generators declare every callable they reference (`declare`: one table entry per
name, its kind fixed on first declaration), add constants (`constant`: equal scalars, shapes,
dtypes and strings share one entry, a tensor constant one entry per array), and, for bytecode,
append instructions (`emit`, `patch` for forward jumps). `executable` returns the runtime's
`kiln.runtime.vm_format.Executable` (the table in declaration order).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from kiln.errors import CodegenError
from kiln.runtime.vm_format import (
    Executable,
    FuncKind,
    Instruction,
    VMFunction,
)


def _const_key(value: Any) -> tuple[Any, ...]:
    if isinstance(value, np.ndarray):
        return ("tensor", id(value))
    return (type(value).__name__, value)  # scalars, strings, ShapeConst, DTypeConst: by value


class ExecBuilder:
    """The function table, constant pool and instruction stream of one executable."""

    def __init__(self) -> None:
        self.functions: list[VMFunction] = []
        self.instructions: list[Instruction] = []
        self.constants: list[Any] = []
        self._index: dict[str, int] = {}
        self._consts: dict[tuple[Any, ...], int] = {}
        self._keep: list[Any] = []  # keeps keyed-by-id arrays alive

    # -- the function table ----------------------------------------------------------------------
    def declare(self, name: str, kind: FuncKind) -> int:
        """The table index of ``name``, declared with ``kind`` when it is new."""
        index = self._index.get(name)
        if index is not None:
            have = self.functions[index].kind
            if have is not kind:
                raise CodegenError(
                    f"VM codegen: {name!r} is both a {have.name.lower()} and a "
                    f"{kind.name.lower()} function; names must be unique across the module"
                )
            return index
        self._index[name] = len(self.functions)
        self.functions.append(VMFunction(name, kind))
        return len(self.functions) - 1

    def define(
        self,
        name: str,
        kind: FuncKind,
        params: tuple[str, ...],
        registers: int,
        start: int = 0,
        end: int = 0,
    ) -> None:
        """Fill in the entry of VM function ``name`` once its code is generated."""
        index = self.declare(name, kind)
        entry = replace(self.functions[index], params=params, num_registers=registers)
        self.functions[index] = replace(entry, start=start, end=end)

    def index(self, name: str) -> int:
        return self._index[name]

    # -- constants -------------------------------------------------------------------------------
    def constant(self, value: Any) -> int:
        """The constant-pool index of ``value`` (added when new)."""
        key = _const_key(value)
        found = self._consts.get(key)
        if found is None:
            found = self._consts[key] = len(self.constants)
            self.constants.append(value)
            self._keep.append(value)
        return found

    # -- bytecode --------------------------------------------------------------------------------
    @property
    def pc(self) -> int:
        """The index the next instruction gets."""
        return len(self.instructions)

    def emit(self, ins: Instruction) -> int:
        self.instructions.append(ins)
        return len(self.instructions) - 1

    def patch(self, pos: int, ins: Instruction) -> None:
        self.instructions[pos] = ins

    def executable(self, library: Any = None) -> Executable:
        """The runtime executable of everything built so far."""
        return Executable(
            tuple(self.functions), tuple(self.instructions), tuple(self.constants), library
        )
