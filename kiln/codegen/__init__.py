"""Code generators and per-target build: `CodeGenC` (typed C functions), `CodeGenCHost` (plus
tvm-ffi entries), `CodeGenCUDA` (kernels) and `codegen` / `compile_source` per target kind."""

from kiln.codegen.build import Generated, codegen, compile_source, generate
from kiln.codegen.c import CodeGenC
from kiln.codegen.c_host import CodeGenCHost, codegen_c
from kiln.errors import CodegenError

__all__ = [
    "CodeGenC",
    "CodeGenCHost",
    "CodegenError",
    "Generated",
    "codegen",
    "codegen_c",
    "compile_source",
    "generate",
]
