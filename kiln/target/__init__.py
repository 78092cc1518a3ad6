"""Targets and code generation: `Target`, the C code generator, per-kind build steps."""

from kiln.target.build import codegen, compile_source
from kiln.target.codegen import CodeGenC, CodeGenCHost, CodegenError, codegen_c
from kiln.target.target import TARGET_KINDS, Target, TargetKind

__all__ = [
    "TARGET_KINDS",
    "CodeGenC",
    "CodeGenCHost",
    "CodegenError",
    "Target",
    "TargetKind",
    "codegen",
    "codegen_c",
    "compile_source",
]
