"""Backends of the graph level: lowering primitive functions through TE (`te_compiler`, with
per-target computes in `strategy`) and external code generators (`codegen`: the registry;
`dnnl`: oneDNN, registered when this package loads; the library itself is found when a
partition is compiled)."""

from kiln.relax.backend import dnnl  # noqa: F401  (registers the "dnnl" codegen)
from kiln.relax.backend.codegen import (
    EXTERNAL_MODS,
    CSource,
    ExternalSource,
    get_codegen,
    linked_source,
    list_codegens,
    register_codegen,
    unregister_codegen,
)

__all__ = [
    "EXTERNAL_MODS",
    "CSource",
    "ExternalSource",
    "get_codegen",
    "linked_source",
    "list_codegens",
    "register_codegen",
    "unregister_codegen",
]
