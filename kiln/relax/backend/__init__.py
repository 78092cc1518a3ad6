"""Backends of the graph level: lowering primitive functions through TE (`te_compiler`, with
per-target computes in `strategy`) and external code generators (`codegen`: the registry;
`dnnl`: oneDNN, loaded on first use)."""

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
