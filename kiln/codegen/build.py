"""Per-target-kind build steps: generate source for a lowered module, compile and load it.

``c``: the module is one C file (`codegen_c`). ``cuda``: the device functions (kernels, with
``calling_conv`` 2, and device-only helpers) go through `CodeGenCUDA` and NVRTC to a CUBIN for the
target's ``arch``; the rest is host C (`CodeGenCUDAHost`) that embeds the CUBIN and launches its
kernels, so the result is again one C file, compiled by the C toolchain into one library.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kiln.codegen.c_host import codegen_c
from kiln.codegen.cuda import codegen_cuda
from kiln.codegen.cuda_host import CodeGenCUDAHost, KernelInfo
from kiln.errors import KilnError
from kiln.ir.module import IRModule
from kiln.ir.target import Target
from kiln.runtime import Module, build_module
from kiln.runtime.cuda_compile import compile_cuda
from kiln.runtime.toolchain import default_flags
from kiln.tir.analysis.device import is_kernel
from kiln.tir.attrs import PACKED_API, TARGET
from kiln.tir.function import PrimFunc


def is_device_function(func: object) -> bool:
    """A kernel, or a function bound to a device target without a host (a device helper)."""
    if not isinstance(func, PrimFunc):
        return False
    if is_kernel(func):
        return True
    target = func.get_attr(TARGET)
    if target is None or func.get_attr(PACKED_API) is not None:
        return False
    target = Target.from_any(target)
    return not target.kind_info.is_host and target.host is None


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


def codegen_cuda_module(mod: IRModule, target: Target) -> str:
    """Host C of a lowered CUDA module, with its kernels compiled (NVRTC) and embedded."""
    host, device = split_device_functions(mod)
    source = codegen_cuda(device, fast_math=bool(target.get("fast_math", False)))
    kernels = [KernelInfo.of(f) for f in device.functions.values() if is_kernel(f)]
    hint = kernels[0].symbol if kernels else "kiln_cuda"
    cubin = compile_cuda(source, cuda_arch(target), name_hint=hint) if kernels else b""
    gen = CodeGenCUDAHost(kernels, cubin, source)
    gen.add_module(host)
    return gen.finish()


CODEGENS: dict[str, Callable[[IRModule, Target], str]] = {
    "c": lambda mod, target: codegen_c(mod),
    "cuda": codegen_cuda_module,
}
"""target kind -> source generator for a lowered module."""


def codegen(mod: IRModule, target: Target) -> str:
    """The source code of a lowered module for ``target``."""
    gen = CODEGENS.get(target.kind)
    if gen is None:
        raise KilnError(f"no code generator for target {target.kind!r}; have {sorted(CODEGENS)}")
    return gen(mod, target)


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
    source: str, target: Target, *, flags: Sequence[str] | None = None, name_hint: str = "kiln"
) -> Module:
    """Compile generated source (cached on disk) and load it as a runtime `Module`; the flags
    are `compile_flags` (the cache key covers them)."""
    if target.kind not in ("c", "cuda"):  # a CUDA build is host C with the CUBIN inside
        raise KilnError(f"cannot compile sources for target {target.kind!r} yet")
    return build_module(source, flags=compile_flags(target, flags), name_hint=name_hint)
