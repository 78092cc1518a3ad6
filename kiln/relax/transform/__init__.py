"""Graph-level passes, one per file (each maps an IRModule to an IRModule)."""

from kiln.relax.transform.legalize_ops import LegalizeOps

__all__ = ["LegalizeOps"]
