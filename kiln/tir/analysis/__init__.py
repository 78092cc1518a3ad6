"""Analyses over TIR: typing, the well-formedness verifier, variable sets, device placement.

Passes import what they share from here (never from another pass): `vars` (free / defined /
used variables), `rebind` (renaming, fresh copies), `device` (targets, thread scopes, kernels,
barriers, allocation sizes).
"""

from kiln.tir.analysis.rebind import Rebind, fresh_copy
from kiln.tir.analysis.types import get_type
from kiln.tir.analysis.vars import defined_vars, free_vars, used_vars
from kiln.tir.analysis.verify import verify_well_formed

__all__ = [
    "Rebind",
    "defined_vars",
    "free_vars",
    "fresh_copy",
    "get_type",
    "used_vars",
    "verify_well_formed",
]
