"""Function attributes of fusion and lowering, and the names of fused functions (what `FuseOps`,
`PartitionForCompiler` and `LowerTE` share).

- ``Primitive=1``: a function of operator calls to lower as one kernel (`FuseOps` makes them);
- ``Compiler="<name>"``: a primitive function for the external codegen ``<name>``;
- ``Composite="<pattern>"``: the pattern a `PartitionForCompiler` function matched;
- ``Extern=1``: a function whose code comes from an external codegen (only its signature is
  used; `LowerTE` leaves it behind).
"""

from __future__ import annotations

from typing import Any

from kiln.relax.expr import Function

PRIMITIVE = "Primitive"
COMPILER = "Compiler"
COMPOSITE = "Composite"
EXTERN = "Extern"

MAX_NAME = 64
"""Fused function names are cut to this many characters (the ops' names can be many)."""


def fused_name(prefix: str, ops: list[str]) -> str:
    """``<prefix>_<op>_<op>...``, cut to `MAX_NAME` characters."""
    return f"{prefix}_{'_'.join(ops)}"[:MAX_NAME].rstrip("_")


def is_lowerable(func: Any) -> bool:
    """Whether fusion and lowering rewrite the calls inside ``func`` (a plain graph function:
    not primitive, external or for a compiler)."""
    if not isinstance(func, Function):
        return False
    return not any(func.get_attr(k) for k in (PRIMITIVE, EXTERN, COMPILER))
