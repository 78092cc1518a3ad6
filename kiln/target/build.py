"""Per-target-kind build steps: generate source for a lowered module, compile and load it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kiln.errors import KilnError
from kiln.ir.module import IRModule
from kiln.runtime import Module, build_module
from kiln.target.codegen.c_host import codegen_c
from kiln.target.target import Target

CODEGENS: dict[str, Callable[[IRModule, Target], str]] = {
    "c": lambda mod, target: codegen_c(mod),
}
"""target kind -> source generator for a lowered module."""


def codegen(mod: IRModule, target: Target) -> str:
    """The source code of a lowered module for ``target``."""
    gen = CODEGENS.get(target.kind)
    if gen is None:
        raise KilnError(f"no code generator for target {target.kind!r}; have {sorted(CODEGENS)}")
    return gen(mod, target)


def compile_source(
    source: str, target: Target, *, flags: Sequence[str] | None = None, name_hint: str = "kiln"
) -> Module:
    """Compile generated source (cached on disk) and load it as a runtime `Module`."""
    if target.kind != "c":
        raise KilnError(f"cannot compile sources for target {target.kind!r} yet")
    return build_module(
        source, flags=tuple(flags) if flags is not None else None, name_hint=name_hint
    )
