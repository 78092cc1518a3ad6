"""Code generators: `CodeGenC` (typed C functions) and `CodeGenCHost` (plus tvm-ffi entries)."""

from kiln.target.codegen.c import CodeGenC
from kiln.target.codegen.c_expr import CodegenError
from kiln.target.codegen.c_host import CodeGenCHost, codegen_c

__all__ = ["CodeGenC", "CodeGenCHost", "CodegenError", "codegen_c"]
