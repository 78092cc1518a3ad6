"""`kiln.build`: verify, lower through the default TIR pipeline, generate code, compile, load.

Debugging (``KILN_DEBUG``, read through `kiln.config`): 1 verifies the module after every pass
(naming the pass that broke it), 2 also prints the IR after every pass, 3 also prints the
generated source. The input module is always verified first, so malformed IR is reported as a
`VerifyError` naming the node, never as a C compiler error.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from kiln import config, te, topi
from kiln.codegen.build import compile_source, generate
from kiln.driver.tir_pipeline import default_tir_pipeline
from kiln.errors import KilnError
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.target import Target
from kiln.ir.transform import Pass, PassContext, PassInstrument, Sequential
from kiln.runtime import Module
from kiln.tir.analysis import verify_well_formed
from kiln.tir.attrs import CALLING_CONV, KERNEL_LAUNCH
from kiln.tir.function import PrimFunc


def as_module(obj: IRModule | PrimFunc) -> IRModule:
    """A module from a module or a single PrimFunc (exposed as its symbol, or ``main``)."""
    if isinstance(obj, IRModule):
        return obj
    if isinstance(obj, PrimFunc):
        name = obj.global_symbol or "main"
        func = obj if obj.global_symbol else obj.with_attr("global_symbol", name)
        return IRModule({GlobalVar(name): func})
    raise KilnError(f"kiln.build expects an IRModule or a PrimFunc, got {type(obj).__name__}")


def lower(
    obj: IRModule | PrimFunc,
    target: str | Target = "c",
    *,
    pipeline: Sequence[Pass] | None = None,
    instruments: Sequence[PassInstrument] = (),
    print_from: int = 2,
) -> IRModule:
    """Verify ``obj`` and run the TIR pipeline for ``target`` (with ``instruments`` besides
    those of ``KILN_DEBUG``); returns the lowered module. The module prints after each pass
    from ``KILN_DEBUG=print_from`` on (a model's compile units pass 3: at 2 a model prints its
    graph-level passes only)."""
    mod = as_module(obj)
    tgt = build_target(target)
    cfg = config.load()
    verify_well_formed(mod)
    ctx = PassContext.for_debug_level(
        cfg.debug,
        verify=verify_well_formed,
        print_from=print_from,
        print_after=cfg.print_after,
        print_funcs=cfg.print_funcs,
    )
    ctx.instruments.extend(instruments)
    passes = list(pipeline) if pipeline is not None else default_tir_pipeline(tgt)
    return Sequential(passes)(mod, ctx)


def build(
    obj: IRModule | PrimFunc,
    target: str | Target = "c",
    *,
    flags: Sequence[str] | None = None,
    pipeline: Sequence[Pass] | None = None,
    name: str | None = None,
) -> Module:
    """Compile a module (or one PrimFunc) for ``target`` and load it.

    ``flags`` replaces the C compiler's default flags (extra sources or libraries may be
    listed there too; ``-march=`` comes from the target's ``mcpu`` unless they name one, see
    `kiln.codegen.build.compile_flags`); ``name`` names the cached library (default: the first
    exposed function).
    The returned `Module` keeps the generated source (`Module.inspect_source`).
    """
    tgt = build_target(target)
    mod = lower(obj, tgt, pipeline=pipeline)
    generated = generate(mod, tgt)
    if config.load().debug >= 3:
        print(f"# ---- generated source for target {tgt} ----", file=sys.stderr)
        print(generated.source, file=sys.stderr)
    # NOTE: kernels are exposed too (their symbol is the CUDA name); name the library after a host
    # entry point
    entries = [f for f in mod.functions.values() if f.get_attr(CALLING_CONV) != KERNEL_LAUNCH]
    hint = name or next((f.global_symbol for f in entries if f.global_symbol), None)
    return compile_source(generated, tgt, flags=flags, name_hint=hint or "kiln")


def build_op(
    outputs: Any, args: Any, target: str | Target = "c", name: str = "main"
) -> Callable[..., Any]:
    """Schedule tensor-expression ``outputs`` with the operator library's default schedule
    (`kiln.topi.schedule_for`), lower them with ``args`` (inputs then outputs) and build; returns
    the compiled function (call it with arrays; outputs are written in place)."""
    func = te.lower(topi.schedule_for(outputs, target), list(args), name=name)
    return build(func, target=target)[name]


def build_target(target: str | Target) -> Target:
    """The target a build lowers for: a device target without a host gets its default host."""
    tgt = Target.from_any(target)
    if not tgt.is_host_kind and tgt.host is None:
        tgt = tgt.with_host(tgt.host_target())
    return tgt
