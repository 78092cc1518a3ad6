"""The VM compiler half: from VM-form graph functions to an executable the runtime's
`VirtualMachine` runs, as bytecode or as compiled ``__vmtir__`` functions.

`vm_codegen` (kiln/vm/codegen.py) fills an `ExecBuilder` (function table, constants, bytecode)
and returns the TIR module the library is built from; `Executable` adds the library's source
and flags for `export_library`. The builtin table these code generators emit from is the
runtime's, `kiln.runtime.vm_builtins`.
"""

from kiln.vm.codegen import EXEC_MODES, check_exec_mode, vm_codegen
from kiln.vm.exec_builder import ExecBuilder
from kiln.vm.executable import Executable

__all__ = ["EXEC_MODES", "ExecBuilder", "Executable", "check_exec_mode", "vm_codegen"]
