"""Analyses of graph-level IR: struct info (fit, join, erase), variables, well-formedness."""

from kiln.relax.analysis.struct_info import (
    Fit,
    check_fits,
    erase_to_well_defined,
    is_base_of,
    struct_info_lca,
    substitute_sinfo,
    tir_vars,
)

__all__ = [
    "Fit",
    "check_fits",
    "erase_to_well_defined",
    "is_base_of",
    "struct_info_lca",
    "substitute_sinfo",
    "tir_vars",
]
