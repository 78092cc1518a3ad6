"""`Executable`: the runtime's executable plus what exporting it needs.

It is a `kiln.runtime.vm_format.Executable` (function table, bytecode, constants, the loaded
library), so a `VirtualMachine` runs it as it is, and it remembers the C source and compiler
flags of its library, so `export_library` writes one shared library built the same way as the
kernels were (same flags, hence the same ``-march``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kiln.runtime import vm_format
from kiln.runtime.vm_export import export_library


@dataclass(frozen=True, eq=False)
class Executable(vm_format.Executable):
    """A compiled VM program (see the module docstring)."""

    source: str | None = None
    flags: tuple[str, ...] | None = None
    units: tuple[str, ...] | None = None
    """The translation units the library was compiled from (``source`` is them joined, to
    read); exporting reuses their cached objects."""

    def export_library(
        self,
        path: str | os.PathLike[str],
        *,
        source: str | None = None,
        flags: tuple[str, ...] | None = None,
    ) -> Path:
        """Write the kernels, the VM functions or bytecode, and the constants as one library."""
        use_flags = flags if flags else self.flags
        if source is None and self.units:
            return export_library(self, path, units=self.units, flags=use_flags)
        src = source if source is not None else self.source
        return export_library(self, path, source=src, flags=use_flags)

    def stats(self) -> str:
        """A summary: mode, VM functions, kernels, instructions and constants."""
        funcs = ", ".join(self.vm_function_names) or "none"
        return (
            f"{self.exec_mode} executable: VM functions {funcs}; {len(self.kernels)} kernels; "
            f"{len(self.instructions)} instructions; {len(self.constants)} constants"
        )

    def __repr__(self) -> str:
        return f"<kiln.vm.Executable: {self.stats()}>"
