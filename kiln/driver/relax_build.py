"""`kiln.relax.build`: a graph-level module to an `Executable` the `VirtualMachine` runs.

    ex = kiln.relax.build(mod, target="c", exec_mode="compiled")   # or "bytecode"
    vm = kiln.relax.VirtualMachine(ex)
    y = vm["main"](x, w)

Steps: the graph-level pipeline (`default_relax_pipeline`) to VM form, `kiln.vm.vm_codegen`
(bytecode, or ``__vmtir__`` PrimFuncs), then the kernels and the ``__vmtir__`` functions
through `kiln.build` (the TIR pipeline, C, the system compiler) into one library. The
executable remembers that library's source and flags, so ``ex.export_library(path)`` writes one
shared library compiled the same way. ``KILN_DEBUG`` works as for `kiln.build`: 1 verifies the
module after every graph-level pass too, 2 prints it.
"""

from __future__ import annotations

from collections.abc import Sequence

from kiln.driver.build import build as build_tir
from kiln.driver.build import build_target
from kiln.driver.pipeline import default_relax_pipeline
from kiln.errors import KilnError
from kiln.ir.module import IRModule
from kiln.ir.target import Target
from kiln.ir.transform import Pass, Sequential
from kiln.relax.expr import Function
from kiln.relax.function_pass import debug_pass_context
from kiln.tir.function import PrimFunc
from kiln.vm import ExecBuilder, Executable, check_exec_mode, vm_codegen


def lower_to_vm(
    mod: IRModule, target: str | Target = "c", *, pipeline: Sequence[Pass] | None = None
) -> IRModule:
    """``mod`` after the graph-level pipeline: VM-form functions and their kernels."""
    if not isinstance(mod, IRModule):
        raise KilnError(f"kiln.relax.build expects an IRModule, got {type(mod).__name__}")
    if not any(isinstance(f, Function) for f in mod.functions.values()):
        raise KilnError(
            "kiln.relax.build: the module has no graph-level (R.function) function to run; "
            "build a module of PrimFuncs with kiln.build"
        )
    passes = (
        list(pipeline) if pipeline is not None else default_relax_pipeline(build_target(target))
    )
    return Sequential(passes)(mod, debug_pass_context())


def build(
    mod: IRModule,
    target: str | Target = "c",
    exec_mode: str = "compiled",
    *,
    flags: Sequence[str] | None = None,
    pipeline: Sequence[Pass] | None = None,
) -> Executable:
    """Compile the graph-level module ``mod`` for the VM (see the module docstring).

    ``flags`` replaces the C compiler's default flags for the library (and its export).
    """
    check_exec_mode(exec_mode)
    tgt = build_target(target)
    if tgt.kind != "c":
        raise KilnError(f"the kiln VM runs on the CPU for now: build for target 'c', not {tgt}")
    lowered = lower_to_vm(mod, tgt, pipeline=pipeline)
    builder = ExecBuilder()
    tir_mod = vm_codegen(lowered, exec_mode, builder)
    library, source = None, None
    if any(isinstance(f, PrimFunc) for f in tir_mod.functions.values()):
        library = build_tir(tir_mod, tgt, flags=flags, name="kiln_vm")
        source = library.inspect_source()
    base = builder.executable(library)
    return Executable(
        base.functions,
        base.instructions,
        base.constants,
        library,
        source=source,
        flags=tuple(flags) if flags is not None else None,
    )
