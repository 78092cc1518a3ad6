"""`vm_codegen`: a VM-form module to the executable's function table, bytecode and constants
(in an `ExecBuilder`) plus the TIR module its library is built from.

``exec_mode="compiled"`` (the default): every graph-level function becomes a ``__vmtir__<name>``
PrimFunc (`kiln.vm.codegen_tir`), returned beside the kernels; ``"bytecode"``: the functions
become instructions (`kiln.vm.codegen_bytecode`) and the returned module holds the kernels only.
Either way every kernel of the module -- its PrimFuncs and the symbols of its external C
(``external_mods``) -- is listed in the function table (the kernel table, ``Executable.kernels``),
so the VM finds each in the library when it starts. ``Extern=1`` graph functions are not
translated: their code is that external C.
"""

from __future__ import annotations

from kiln.errors import KilnError
from kiln.ir.module import IRModule
from kiln.runtime.vm_format import VMTIR_PREFIX, FuncKind
from kiln.tir.function import PrimFunc
from kiln.vm.codegen_bytecode import codegen_bytecode
from kiln.vm.codegen_tir import codegen_tir
from kiln.vm.exec_builder import ExecBuilder
from kiln.vm.functions import linked_symbols

EXEC_MODES = ("bytecode", "compiled")


def check_exec_mode(exec_mode: str) -> str:
    if exec_mode not in EXEC_MODES:
        raise KilnError(f"exec_mode must be one of {', '.join(EXEC_MODES)}, got {exec_mode!r}")
    return exec_mode


def vm_codegen(
    mod: IRModule, exec_mode: str = "compiled", builder: ExecBuilder | None = None
) -> IRModule:
    """The library's TIR module; the function table, bytecode and constants go to ``builder``
    (see the module docstring). ``mod`` must be in VM form (`default_relax_pipeline`)."""
    builder = builder if builder is not None else ExecBuilder()
    if check_exec_mode(exec_mode) == "compiled":
        out = codegen_tir(mod, builder)
    else:
        out = codegen_bytecode(mod, builder)
    for func in out.functions.values():
        sym = func.global_symbol if isinstance(func, PrimFunc) else None
        if sym is not None and not sym.startswith(VMTIR_PREFIX):
            builder.declare(sym, FuncKind.KERNEL)
    for sym in sorted(linked_symbols(mod)):
        builder.declare(sym, FuncKind.KERNEL)
    return out
