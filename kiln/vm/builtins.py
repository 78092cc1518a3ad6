"""The VM builtin table, where the compiler half looks for it: `kiln.vm.builtins` is
`kiln.runtime.vm_builtins` (one table; it lives in the runtime layer, which implements the
builtins in C and must not import the compiler)."""

from kiln.runtime.vm_builtins import (
    BUILTIN_PREFIX,
    BUILTINS,
    Builtin,
    Effect,
    MakeCode,
    MatchCode,
    builtin,
    is_builtin,
)

__all__ = [
    "BUILTINS",
    "BUILTIN_PREFIX",
    "Builtin",
    "Effect",
    "MakeCode",
    "MatchCode",
    "builtin",
    "is_builtin",
]
