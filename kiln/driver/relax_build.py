"""`kiln.relax.build`: a graph-level module to an `Executable` the `VirtualMachine` runs.

    ex = kiln.relax.build(mod, target="c", exec_mode="compiled")   # or "bytecode"
    vm = kiln.relax.VirtualMachine(ex)
    y = vm["main"](x, w)

Steps: the graph-level pipeline (`default_relax_pipeline`: fusion, kernels scheduled for
``target`` by LowerTE, external codegens named in ``external_codegens``, VM lowering) to VM form,
`kiln.vm.vm_codegen` (bytecode, or ``__vmtir__`` PrimFuncs), then the kernels and the
``__vmtir__`` functions through the TIR pipeline and the C host code generator in a few
translation units (`build_library`), compiled in parallel (cached per unit) and linked with the
external C of the module (``external_mods``, `linked_source`, whose symbols the library exposes)
into one library. The executable remembers those units and their exact flags (`model_flags`:
`MODEL_FLAGS`, ``-march`` from the target, plus what the external C needs), so
``ex.export_library(path)`` links one shared library from the same cached objects. The
executable records the signature of each public function of ``mod`` (`kiln.driver.signature`),
so an exported library says what it takes and returns, and each kernel's work and the model
nodes it computes (`kernel_costs`, `kernel_nodes`), for profiles, and which external codegen
made each external function (`external_codegens_of`), for ``kiln inspect``.
``KILN_DEBUG`` works as for `kiln.build`: 1 verifies the module after every graph-level pass
too, 2 prints it, 3 prints the generated C.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kiln import config
from kiln.codegen.build import compile_flags, report_missed_vectorization
from kiln.codegen.units import Unit, function_groups, generate_unit, pack_units
from kiln.driver import kernel_cache
from kiln.driver.build import build_target, lower
from kiln.driver.kernel_cache import alias_c_source, canonical_symbol, kernel_key, record
from kiln.driver.passes import check_print_after
from kiln.driver.pipeline import default_relax_pipeline
from kiln.driver.signature import signatures
from kiln.driver.timing import CompileTimer
from kiln.errors import KilnError
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.target import Target
from kiln.ir.transform import Pass, Sequential
from kiln.relax.analysis.cost import COST
from kiln.relax.analysis.primitive import EXTERN
from kiln.relax.backend.codegen import EXTERNAL_MODS, ExternalSource, linked_source
from kiln.relax.expr import Function
from kiln.relax.function_pass import debug_pass_context
from kiln.relax.transform.lower_te import NODES
from kiln.runtime import ArgInfo, Module, load_module, metadata_c_source
from kiln.runtime.parallel_build import compile_units
from kiln.runtime.toolchain import DEFAULT_FLAGS
from kiln.runtime.vm_format import VMTIR_PREFIX
from kiln.tir.function import PrimFunc
from kiln.vm import ExecBuilder, Executable, check_exec_mode, vm_codegen

# NOTE: measured on ResNet-18 (2026-11-24, gcc 12, AVX-512): -O2 halves the C compiler's time
# (11.5 -> 4.8 CPU s) and the model runs as fast (249 vs 263 ms median, 1 thread, shared
# machine); matmul 512^3 and conv2d 3x3 built by kiln.build reach the same GFLOP/s at -O2
# (102.8 vs 101.7, 93.8 vs 96.7 best). kiln's kernels carry their own vectors and tiles, so
# -O3's extra loop transformations buy nothing here but compile time.
MODEL_FLAGS: tuple[str, ...] = tuple("-O2" if f == "-O3" else f for f in DEFAULT_FLAGS)
"""The C compiler's flags for a model's library (``-march`` from the target)."""

UNITS_PER_CPU = 2
"""Translation units per CPU of a model's library: more balance the compiler processes better,
fewer repeat less of the shared preamble (helpers, headers)."""


def lower_to_vm(
    mod: IRModule,
    target: str | Target = "c",
    *,
    pipeline: Sequence[Pass] | None = None,
    external_codegens: Sequence[str] = (),
    timer: CompileTimer | None = None,
) -> IRModule:
    """``mod`` after the graph-level pipeline: VM-form functions and their kernels (each pass
    a phase of ``timer``, when given)."""
    if not isinstance(mod, IRModule):
        raise KilnError(f"kiln.relax.build expects an IRModule, got {type(mod).__name__}")
    if not any(isinstance(f, Function) for f in mod.functions.values()):
        raise KilnError(
            "kiln.relax.build: the module has no graph-level (R.function) function to run; "
            "build a module of PrimFuncs with kiln.build"
        )
    if pipeline is None:
        pipeline = default_relax_pipeline(
            build_target(target), external_codegens=tuple(external_codegens)
        )
    check_print_after(config.load().print_after)
    ctx = debug_pass_context()
    if timer is not None:
        ctx.instruments.append(timer.passes("graph"))
    return Sequential(list(pipeline))(mod, ctx)


def build_library(
    tir_mod: IRModule,
    target: Target,
    flags: Sequence[str] | None = None,
    timer: CompileTimer | None = None,
) -> tuple[Module | None, tuple[str, ...], tuple[str, ...]]:
    """(library, its C translation units, the flags they were compiled with) of the kernels
    and ``__vmtir__`` functions of ``tir_mod`` and its external C; no library and no units when
    there is nothing to compile.

    The functions are split into parts (`pack_units`: a few per CPU), and each part is lowered
    and generated as one C translation unit while the units before it compile (`compile_units`
    runs the C compiler in parallel, cached per unit); a last unit holds the library's list of
    exposed functions and the external C. The objects are linked into one library. With a
    ``timer``: the TIR passes (summed over units), C code generation, the wait for the compiler
    and the load are its phases, each unit's compile and the link its details."""
    externals: tuple[ExternalSource, ...] = tuple(tir_mod.get_attr(EXTERNAL_MODS, ()))
    # NOTE: a kernel's node names are this model's, not the kernel's: they stay out of its
    # cache key (a model with other names reuses the kernel) and out of its C
    prims = {gv: _without_nodes(f) for gv, f in tir_mod.items() if isinstance(f, PrimFunc)}
    base_flags = model_flags(target, flags)
    if not prims and not externals:
        return None, (), base_flags
    extra = linked_source("", externals)[1]
    all_flags = (*base_flags, *(f for f in extra if f not in base_flags))
    jobs = os.cpu_count() or 1
    units: list[Unit] = []
    clock = timer or CompileTimer()
    tir_passes = [] if timer is None else [timer.passes("tir")]
    with clock.phase("kernel cache lookup"):
        plan = KernelPlan.of(prims, target, all_flags)

    def sources() -> Iterator[str]:
        yield from plan.reused
        # NOTE: the kernels' units hold nothing of this model's own (a later model links them);
        # the model's own unit (its VM functions: DenseNet-121's take 1.4 s to compile) first,
        # so that it compiles while the kernels are lowered.
        parts = pack_units(IRModule(plan.compile), UNITS_PER_CPU * jobs)
        for part in [*pack_units(IRModule(plan.own), 1), *parts]:
            with clock.phase("tir: (verify, split)"):
                lowered = lower(part, target, instruments=tir_passes, print_from=3)
            with clock.phase("c codegen"):
                units.append(generate_unit(lowered))
            yield units[-1].source
        # NOTE: the external symbols are listed with the kernels, so the VM finds them by name.
        found = {k: v for u in units for k, v in u.signatures.items()}
        symbols = set(plan.aliases.values())
        exposed = [n for u in units for n in u.exposed if n not in symbols]
        exposed += [*plan.aliases, *(e.symbol for e in externals)]
        signatures = {n: v for n, v in found.items() if n not in symbols}
        for name, symbol in plan.aliases.items():
            signatures[name] = found[symbol] if symbol in found else plan.reused_args[name]
        meta = metadata_c_source(exposed, signatures) + alias_c_source(plan.aliases)
        yield linked_source(meta, externals)[0]

    report = None if timer is None else timer.detail
    # NOTE: the units are lowered inside (phases of their own); what is left is the wait.
    with clock.phase("c compile (waiting) + link"):
        path, objects, texts = compile_units(
            sources(), flags=all_flags, name_hint="kiln_vm", jobs=jobs, report=report
        )
    if config.load().debug >= 3:
        print(f"# ---- generated source for target {target} ----", file=sys.stderr)
        print(joined_source(texts), file=sys.stderr)
    built = objects[len(plan.reused) :]
    plan.remember(built, units)
    with clock.phase("load"):
        for obj, unit in zip(built, units):
            report_missed_vectorization(obj, unit.loops)
        library = load_module(path, source=joined_source(texts))
    return library, texts, all_flags


@dataclass
class KernelPlan:
    """Which kernels of a library `kernel_cache` holds (their units are linked as they are)
    and which are compiled (under their cache symbols); see `kiln.driver.kernel_cache`."""

    compile: dict[GlobalVar, PrimFunc]
    """The kernels to compile (cacheable: under their cache symbols, when the cache is on)."""
    own: dict[GlobalVar, PrimFunc] = field(default_factory=dict)
    """This model's own functions (its VM functions, kernels with helpers): never cached."""
    reused: list[str] = field(default_factory=list)
    """The C of the cached units to link (each once)."""
    aliases: dict[str, str] = field(default_factory=dict)
    """Kernel name in this module -> its exported symbol in a unit (cached or compiled now)."""
    reused_args: dict[str, tuple[ArgInfo, ...]] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)
    """Symbol of a kernel compiled now -> its cache key."""

    @staticmethod
    def of(prims: dict[GlobalVar, PrimFunc], target: Target, flags: Sequence[str]) -> KernelPlan:
        if not kernel_cache.enabled():
            return KernelPlan(dict(prims))
        plan = KernelPlan({})
        module = IRModule(prims)
        grouped: set[GlobalVar] = set()
        for gvs, _ in function_groups(module):
            name = gvs[0].name_hint
            if name.startswith(VMTIR_PREFIX) or len(gvs) > 1:
                continue  # NOTE: the VM's own functions are the model's; helpers stay with it
            key = kernel_key([prims[gvs[0]]], target, flags)
            grouped.add(gvs[0])
            same = next((s for s, k in plan.keys.items() if k == key), None)
            if same is not None:  # NOTE: an equal kernel under another name: compiled once
                plan.aliases[name] = same
                continue
            hit = kernel_cache.lookup(key)
            if hit is not None:
                plan.aliases[name] = hit.symbol
                plan.reused_args[name] = hit.args
                if hit.unit not in plan.reused:
                    plan.reused.append(hit.unit)
                continue
            symbol = canonical_symbol(name, key)
            plan.aliases[name], plan.keys[symbol] = symbol, key
            plan.compile[gvs[0]] = kernel_cache.weak(prims[gvs[0]], symbol)
        plan.own = {gv: f for gv, f in prims.items() if gv not in grouped}
        return plan

    def remember(self, objects: Sequence[Path], units: Sequence[Unit]) -> None:
        """Record the kernels compiled now, each in the unit (object) that holds it."""
        for obj, unit in zip(objects, units):
            for symbol in unit.exposed:
                key = self.keys.get(symbol)
                if key is not None:
                    record(key, obj.with_suffix(".c"), symbol, unit.signatures[symbol])


def model_flags(target: Target, flags: Sequence[str] | None = None) -> tuple[str, ...]:
    """The flags of a model's library: ``flags``, else `MODEL_FLAGS`, with the target's
    ``-march`` (`compile_flags`)."""
    given = [f for f in MODEL_FLAGS if not f.startswith("-march=")] if flags is None else flags
    return compile_flags(target, given)


def joined_source(units: Sequence[str]) -> str:
    """The translation units of a library as one text to read (not to compile)."""
    return "\n".join(f"/* ---- translation unit {k} ---- */\n{u}" for k, u in enumerate(units))


def build(
    mod: IRModule,
    target: str | Target = "c",
    exec_mode: str = "compiled",
    *,
    flags: Sequence[str] | None = None,
    pipeline: Sequence[Pass] | None = None,
    external_codegens: Sequence[str] = (),
    timer: CompileTimer | None = None,
) -> Executable:
    """Compile the graph-level module ``mod`` for the VM (see the module docstring).

    ``flags`` replaces the C compiler's default flags for the library (and its export; the
    target's ``-march`` is added unless they name one); ``external_codegens`` names the external
    codegens (``"dnnl"``) whose supported subgraphs are partitioned out to them; ``pipeline``
    replaces `default_relax_pipeline` altogether; ``timer`` records the phases
    (`kiln.driver.timing`).
    """
    check_exec_mode(exec_mode)
    tgt = build_target(target)
    if tgt.kind != "c":
        raise KilnError(f"the kiln VM runs on the CPU for now: build for target 'c', not {tgt}")
    clock = timer or CompileTimer()
    lowered = lower_to_vm(
        mod, tgt, pipeline=pipeline, external_codegens=external_codegens, timer=timer
    )
    builder = ExecBuilder()
    with clock.phase("vm codegen"):
        tir_mod = vm_codegen(lowered, exec_mode, builder)
    library, units, all_flags = build_library(tir_mod, tgt, flags, timer)
    with clock.phase("executable"):
        base = builder.executable(library)
        source = joined_source(units) if units else None
        return Executable(
            base.functions, base.instructions, base.constants, library, signatures(mod),
            kernel_costs(lowered), kernel_nodes(lowered), external_codegens_of(tir_mod),
            source=source, flags=all_flags, units=units or None,
        )  # fmt: skip


def kernel_costs(mod: IRModule) -> tuple[tuple[str, int | str, int | str], ...]:
    """``(kernel, flops, bytes)`` of each PrimFunc that LowerTE gave a ``kiln.cost`` (a
    symbolic count is the text of its expression, `kiln.relax.analysis.cost.Size`)."""
    out = []
    for gv, f in mod.functions.items():
        cost = f.get_attr(COST) if isinstance(f, PrimFunc) else None
        if cost is not None:
            out.append((gv.name_hint, *(c if isinstance(c, str) else int(c) for c in cost)))
    return tuple(sorted(out))


def kernel_nodes(mod: IRModule) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``(kernel, model node names)`` of each PrimFunc or ``Extern=1`` function (by its symbol)
    that LowerTE gave a ``kiln.nodes`` (`kiln.relax.transform.lower_te.NODES`: the nodes of all
    its call sites in this model)."""
    out = []
    for gv, f in mod.functions.items():
        kernel = isinstance(f, PrimFunc) or isinstance(f, Function) and f.get_attr(EXTERN)
        names = f.get_attr(NODES) if kernel else None
        if names:
            out.append((gv.name_hint, tuple(str(n) for n in names)))
    return tuple(sorted(out))


def external_codegens_of(mod: IRModule) -> tuple[tuple[str, str], ...]:
    """``(symbol, codegen)`` of each external function whose C is linked into the library
    (`kiln.relax.backend.codegen.EXTERNAL_MODS`, which LowerTE fills)."""
    return tuple(sorted((e.symbol, e.compiler) for e in mod.get_attr(EXTERNAL_MODS, ())))


def _without_nodes(func: PrimFunc) -> PrimFunc:
    return func if func.get_attr(NODES) is None else func.without_attr(NODES)  # type: ignore
