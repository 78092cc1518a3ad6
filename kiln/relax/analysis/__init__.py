"""Analyses of graph-level IR: struct info (fit, join, erase), variables, well-formedness."""

from kiln.relax.analysis.free_vars import (
    all_global_vars,
    all_vars,
    bound_vars,
    free_vars,
    has_side_effects,
)
from kiln.relax.analysis.struct_info import (
    Fit,
    check_fits,
    erase_to_well_defined,
    is_base_of,
    struct_info_lca,
    substitute_sinfo,
    tir_vars,
)
from kiln.relax.analysis.well_formed import verify_module, well_formed, well_formed_errors

__all__ = [
    "Fit",
    "all_global_vars",
    "all_vars",
    "bound_vars",
    "check_fits",
    "erase_to_well_defined",
    "free_vars",
    "has_side_effects",
    "is_base_of",
    "struct_info_lca",
    "substitute_sinfo",
    "tir_vars",
    "verify_module",
    "well_formed",
    "well_formed_errors",
]
