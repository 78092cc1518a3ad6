"""Graph-level passes, one per file (each maps an IRModule to an IRModule)."""

from kiln.relax.transform.alter_op_layout import AlterOpLayout
from kiln.relax.transform.attach_global_symbol import AttachGlobalSymbol
from kiln.relax.transform.call_shape_functions import CallShapeFunctions
from kiln.relax.transform.call_tir_rewrite import CallTIRRewrite
from kiln.relax.transform.canonicalize_bindings import CanonicalizeBindings
from kiln.relax.transform.dead_code_elimination import DeadCodeElimination
from kiln.relax.transform.fold_constant import FoldConstant
from kiln.relax.transform.fuse_attention import FuseAttention
from kiln.relax.transform.fuse_ops import FuseOps
from kiln.relax.transform.hoist_dims_only import HoistDimsOnly
from kiln.relax.transform.lambda_lift import LambdaLift
from kiln.relax.transform.legalize_ops import LegalizeOps
from kiln.relax.transform.lower_te import LowerTE
from kiln.relax.transform.normalize import Normalize
from kiln.relax.transform.partition_for_compiler import ChainPattern, PartitionForCompiler
from kiln.relax.transform.rename_symbolic_dims import RenameSymbolicDims
from kiln.relax.transform.simplify_identities import SimplifyIdentities
from kiln.relax.transform.simplify_inference import SimplifyInference
from kiln.relax.transform.static_plan_block_memory import StaticPlanBlockMemory
from kiln.relax.transform.to_non_dataflow import ToNonDataflow
from kiln.relax.transform.vm_builtin_lower import VMBuiltinLower
from kiln.relax.transform.vm_shape_lower import VMShapeLower

__all__ = [
    "AlterOpLayout",
    "AttachGlobalSymbol",
    "CallShapeFunctions",
    "CallTIRRewrite",
    "CanonicalizeBindings",
    "ChainPattern",
    "DeadCodeElimination",
    "FoldConstant",
    "FuseAttention",
    "FuseOps",
    "HoistDimsOnly",
    "LambdaLift",
    "LegalizeOps",
    "LowerTE",
    "Normalize",
    "PartitionForCompiler",
    "RenameSymbolicDims",
    "SimplifyIdentities",
    "SimplifyInference",
    "StaticPlanBlockMemory",
    "ToNonDataflow",
    "VMBuiltinLower",
    "VMShapeLower",
]
