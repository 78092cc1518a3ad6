"""The default pass pipelines, each one visible list (nothing reorders passes behind it).

TIR, for a host target (see DESIGN.md for where the device passes will go):

1. `FlattenBuffer` — N-D buffer accesses become 1-D accesses of the same memory;
2. `MakePackedAPI` — typed signatures, and the checked tvm-ffi entry plan of exposed functions.
"""

from __future__ import annotations

from kiln.ir.transform import Pass
from kiln.target.target import Target
from kiln.tir.transform import FlattenBuffer, MakePackedAPI


def default_tir_pipeline(target: Target) -> list[Pass]:
    """The TIR passes `kiln.build` runs for ``target``, in order."""
    return [
        FlattenBuffer(),
        MakePackedAPI(),
    ]
