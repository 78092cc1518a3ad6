"""Per-target-kind build steps: generate source for a lowered module, compile and load it.

``c``: the module is one C file (`codegen_c`). ``cuda``: the device functions (kernels, with
``calling_conv`` 2, and device-only helpers) go through `CodeGenCUDA` and NVRTC to a CUBIN for the
target's ``arch``; the rest is host C (`CodeGenCUDAHost`) that embeds the CUBIN and launches its
kernels, so the result is again one C file, compiled by the C toolchain into one library.

`generate` returns the source with the line ranges of its loops (`Generated`); `compile_source`
compiles it and, with ``KILN_DEBUG=1``, reports each loop kiln asked to vectorize that the C
compiler did not (`kiln.codegen.vector_report`, through `kiln.config.remark`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kiln import config
from kiln.codegen.c_host import CodeGenCHost
from kiln.codegen.cuda import codegen_cuda
from kiln.codegen.cuda_host import CodeGenCUDAHost, KernelInfo
from kiln.codegen.vector_report import VectorLoop, missed_loops
from kiln.errors import KilnError
from kiln.ir.module import IRModule
from kiln.ir.target import Target
from kiln.runtime import Module, build_module
from kiln.runtime.cuda_compile import compile_cuda
from kiln.runtime.toolchain import compiler_output, default_flags
from kiln.tir.analysis.device import is_device_function, is_kernel


def split_device_functions(mod: IRModule) -> tuple[IRModule, IRModule]:
    """(host functions, device functions) of a lowered module."""
    items = list(mod.functions.items())
    host = IRModule({gv: f for gv, f in items if not is_device_function(f)})
    device = IRModule({gv: f for gv, f in items if is_device_function(f)})
    return host, device


def cuda_arch(target: Target) -> str:
    """The ``sm_XX`` NVRTC compiles for (target attribute ``arch``, default sm_90)."""
    arch = str(target.get("arch", "sm_90"))
    return f"sm_{arch}" if arch.isdigit() else arch


@dataclass(frozen=True)
class Generated:
    """Generated source, and where its loops are (to place the compiler's notes)."""

    source: str
    loops: tuple[VectorLoop, ...] = ()


def generate_c(mod: IRModule, target: Target) -> Generated:
    """C of a lowered host module, with tvm-ffi entries."""
    gen = CodeGenCHost()
    gen.add_module(mod)
    return Generated(gen.finish(), tuple(gen.vector_loops))


def generate_cuda(mod: IRModule, target: Target) -> Generated:
    """Host C of a lowered CUDA module, with its kernels compiled (NVRTC) and embedded."""
    host, device = split_device_functions(mod)
    source = codegen_cuda(device)
    kernels = [KernelInfo.of(f) for f in device.functions.values() if is_kernel(f)]
    hint = kernels[0].symbol if kernels else "kiln_cuda"
    cubin = compile_cuda(source, cuda_arch(target), name_hint=hint) if kernels else b""
    gen = CodeGenCUDAHost(kernels, cubin, source)
    gen.add_module(host)
    return Generated(gen.finish(), tuple(gen.vector_loops))


CODEGENS: dict[str, Callable[[IRModule, Target], Generated]] = {
    "c": generate_c,
    "cuda": generate_cuda,
}
"""target kind -> source generator for a lowered module."""


def generate(mod: IRModule, target: Target) -> Generated:
    """The source code of a lowered module for ``target``, with its loops' lines."""
    gen = CODEGENS.get(target.kind)
    if gen is None:
        raise KilnError(f"no code generator for target {target.kind!r}; have {sorted(CODEGENS)}")
    return gen(mod, target)


def codegen(mod: IRModule, target: Target) -> str:
    """The source code of a lowered module for ``target``."""
    return generate(mod, target).source


def compile_flags(target: Target, flags: Sequence[str] | None = None) -> tuple[str, ...]:
    """The C compiler flags of a build for ``target``: the toolchain's defaults for the CPU of
    its host code (``-march=<mcpu>``, ``native`` unless the target names a CPU), or ``flags``
    with that ``-march=`` added when they name none."""
    march = str(target.host_target().get("mcpu", "native"))
    if flags is None:
        return default_flags(march)
    given = tuple(flags)
    return given if any(f.startswith("-march=") for f in given) else (*given, f"-march={march}")


def compile_source(
    source: str | Generated,
    target: Target,
    *,
    flags: Sequence[str] | None = None,
    name_hint: str = "kiln",
) -> Module:
    """Compile generated source (cached on disk) and load it as a runtime `Module`; with
    ``KILN_DEBUG=1``, say which loops of a `Generated` source the compiler did not vectorize."""
    if target.kind not in ("c", "cuda"):  # a CUDA build is host C with the CUBIN inside
        raise KilnError(f"cannot compile sources for target {target.kind!r} yet")
    gen = source if isinstance(source, Generated) else Generated(source)
    module = build_module(gen.source, flags=compile_flags(target, flags), name_hint=name_hint)
    report_missed_vectorization(module.path, gen.loops)
    return module


def report_missed_vectorization(lib: Path, loops: Sequence[VectorLoop]) -> None:
    """Remark, per loop kiln asked to vectorize, that the compiler of ``lib`` did not."""
    if not any(x.vectorize for x in loops) or config.debug_level() < 1:
        return
    for line in missed_loops(compiler_output(lib), lib.with_suffix(".c").name, list(loops)):
        config.remark(line)
