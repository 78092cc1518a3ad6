"""Analyses over TIR: typing and the well-formedness verifier."""

from kiln.tir.analysis.types import get_type
from kiln.tir.analysis.verify import verify_well_formed

__all__ = ["get_type", "verify_well_formed"]
