"""Graph-level passes, one per file (each maps an IRModule to an IRModule)."""

from kiln.relax.transform.canonicalize_bindings import CanonicalizeBindings
from kiln.relax.transform.dead_code_elimination import DeadCodeElimination
from kiln.relax.transform.fuse_ops import FuseOps
from kiln.relax.transform.legalize_ops import LegalizeOps
from kiln.relax.transform.lower_te import LowerTE
from kiln.relax.transform.normalize import Normalize
from kiln.relax.transform.partition_for_compiler import ChainPattern, PartitionForCompiler
from kiln.relax.transform.to_non_dataflow import ToNonDataflow

__all__ = [
    "ChainPattern",
    "CanonicalizeBindings",
    "DeadCodeElimination",
    "FuseOps",
    "LegalizeOps",
    "LowerTE",
    "Normalize",
    "PartitionForCompiler",
    "ToNonDataflow",
]
