"""CodeGenCUDAHost: the host C of a CUDA build, with the CUBIN embedded and kernel launches.

What it adds to `CodeGenCHost`:

- the CUBIN as a static byte array, with a `kiln_cuda_module` table naming its kernels, and the
  driver loader and launcher of `kiln.runtime.cuda_driver` (the library needs no CUDA headers or
  libraries to build or load);
- ``launch_kernel("k", *args, *extents)`` (from LowerDeviceKernelLaunch) becomes a call of
  ``kiln_cuda_launch``: arguments are stored in locals of the kernel parameters' exact types
  (float16/bfloat16 scalars as their bits), the extents map onto grid and block dimensions by the
  kernel's ``tir.kernel_launch_params`` tags; a failed launch raises and unwinds like any error;
- an intermediate that a host function passes to its kernels is device memory
  (``kiln_cuda_alloc`` on the arguments' device, freed on every exit), never host scratch;
- the entry of an exposed function that launches kernels (itself or through host helpers) first
  checks the driver (raising a clear ``RuntimeError`` without a GPU), then requires every tensor
  argument on CUDA and on one device, whose index the launches use.

The device source is appended as a comment, so the host source shows what the CUBIN holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from kiln.codegen.c import FuncState
from kiln.codegen.c_expr import c_string, is_op
from kiln.codegen.c_host import CodeGenCHost
from kiln.codegen.c_host_prelude import HOST_HELPERS
from kiln.codegen.c_prelude import Prelude
from kiln.errors import CodegenError
from kiln.ir.dtype import DataType
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.visitor import post_order_visit
from kiln.runtime.cuda_driver import DRIVER_C, LAUNCH_C, SCRATCH_C
from kiln.tir import expr as E
from kiln.tir import stmt as S
from kiln.tir.attrs import KERNEL_LAUNCH_PARAMS, USE_DYN_SHARED_MEMORY
from kiln.tir.function import PrimFunc
from kiln.tir.packed_api import PackedArg

CUDA_HOST_HELPERS = {
    **HOST_HELPERS,
    "cuda_driver": (DRIVER_C, ("fail",)),
    "cuda_launch": (LAUNCH_C, ("cuda_driver",)),
    "cuda_scratch": (SCRATCH_C, ("cuda_driver",)),
}

GRID_TAGS = {"blockIdx.x": 0, "blockIdx.y": 1, "blockIdx.z": 2}
BLOCK_TAGS = {"threadIdx.x": 0, "threadIdx.y": 1, "threadIdx.z": 2}
KDL_CUDA = 2


@dataclass(frozen=True)
class KernelInfo:
    """What the host needs to launch a kernel: its symbol, parameter types and launch tags."""

    symbol: str
    params: tuple[DataType | None, ...]  # None: a pointer
    launch_params: tuple[str, ...]

    @staticmethod
    def of(func: PrimFunc) -> KernelInfo:
        params = tuple(None if p.dtype.is_handle else p.dtype for p in func.params)
        tags = tuple(func.get_attr(KERNEL_LAUNCH_PARAMS, ()) or ())
        return KernelInfo(func.global_symbol or "", params, tags)


class CodeGenCUDAHost(CodeGenCHost):
    """Host C for a module whose kernels were compiled to ``cubin`` (see module docstring)."""

    def __init__(self, kernels: list[KernelInfo], cubin: bytes, device_source: str = "") -> None:
        super().__init__()
        self.prelude = Prelude(CUDA_HOST_HELPERS)
        self.kernels = {k.symbol: (i, k) for i, k in enumerate(kernels)}
        self.cubin = cubin
        self.device_source = device_source
        self.launchers: set[str] = set()
        self._first_tensor = True

    def add_module(self, mod: IRModule) -> None:
        self.launchers = launching_functions(mod)
        self.embed_cubin()
        super().add_module(mod)

    def finish(self) -> str:
        text = super().finish()
        if not self.device_source:
            return text
        shown = "\n".join(f"// {line}" for line in self.device_source.splitlines())
        head = "// ---- CUDA device source (compiled by NVRTC into kiln_cuda_image) ----"
        return f"{text}\n{head}\n{shown}\n"

    def embed_cubin(self) -> None:
        """The CUBIN bytes and the kernel table, as prelude definitions."""
        self.prelude.need("cuda_launch")
        data = self.cubin or b"\0"
        rows = [", ".join(str(b) for b in data[i : i + 24]) for i in range(0, len(data), 24)]
        image = (
            f"static const unsigned char kiln_cuda_image[{len(data)}] __attribute__((aligned(64)))"
            " = {\n  " + ",\n  ".join(rows) + "\n};"
        )
        n = max(len(self.kernels), 1)
        names = ", ".join(c_string(s) for s in self.kernels) or "NULL"
        table = "\n".join(
            [
                f"static const char* const kiln_cuda_names[{n}] = {{{names}}};",
                f"static kiln_CUfunction kiln_cuda_funcs[KILN_CUDA_MAX_DEVICES * {n}];",
                f"static int kiln_cuda_smem[KILN_CUDA_MAX_DEVICES * {n}];",
                "static kiln_cuda_module kiln_cuda_kernels = {kiln_cuda_image, kiln_cuda_names, "
                f"{len(self.kernels)}, kiln_cuda_funcs, kiln_cuda_smem, {{0}}}};",
            ]
        )
        self.prelude.need_function("kiln_cuda_image", image)
        self.prelude.need_function("kiln_cuda_kernels", table)

    # -- entries ----------------------------------------------------------------------------
    def is_cuda_entry(self, func: PrimFunc) -> bool:
        target = func.get_attr("target")
        on_cuda = getattr(target, "device", "cpu") == "cuda"
        names = {g.name_hint for g, st in self.funcs.items() if st.func is func}
        return on_cuda or bool(names & self.launchers)

    def tensor_device_type(self, func: PrimFunc) -> int:
        return KDL_CUDA if self.is_cuda_entry(func) else super().tensor_device_type(func)

    def emit_entry_prologue(self, st: FuncState) -> None:
        self._first_tensor = True
        if self.is_cuda_entry(st.func):
            self.emit("if (kiln_cuda_init() != 0) return -1;")

    def emit_data_pointer(self, a: PackedArg, tensor: str) -> None:
        if self.is_cuda_entry(self.fn.func):
            dev = f"{tensor}->device.device_id"
            if self._first_tensor:
                self.emit(f"kiln_cuda_device_id = {dev};")
                self._first_tensor = False
            else:
                msg = f"{self.fn.label}: argument {a.name} is on cuda:%d, the others on cuda:%d"
                fail = f'kiln_fail("ValueError", {c_string(msg)}, {dev}, kiln_cuda_device_id)'
                self.emit(f"if ({dev} != kiln_cuda_device_id) return {fail};")
        super().emit_data_pointer(a, tensor)

    # -- device scratch ---------------------------------------------------------------------
    def stmt_Allocate(self, s: S.Allocate) -> None:
        """An intermediate that the host passes to a kernel lives in device memory."""
        if self.fn.gv.name_hint in self.launchers and passed_to_kernel(s):
            self.prelude.need("cuda_scratch")
            self.heap_allocate(s, "kiln_cuda_alloc", "kiln_cuda_free")
            return
        super().stmt_Allocate(s)

    # -- launches ---------------------------------------------------------------------------
    def stmt_Evaluate(self, s: S.Evaluate) -> None:
        if is_op(s.value, "launch_kernel"):
            self.emit_guard(f"{self.expr(s.value)} != 0")
            return
        super().stmt_Evaluate(s)

    def call_launch_kernel(self, e: E.Call) -> str:
        first = e.args[0] if e.args else None
        if not isinstance(first, E.StringImm) or first.value not in self.kernels:
            known = ", ".join(self.kernels) or "none"
            raise CodegenError(
                f"{self.fn.label}: launch_kernel of an unknown kernel {first!r}; kernels: {known}"
            )
        index, info = self.kernels[first.value]
        n = len(info.params)
        args, values = e.args[1 : 1 + n], e.args[1 + n :]
        if len(args) != n or len(values) != len(info.launch_params):
            raise CodegenError(
                f"{self.fn.label}: launch of {info.symbol} passes {len(e.args) - 1} values; it "
                f"takes {n} argument(s) and {len(info.launch_params)} launch extent(s) "
                f"({', '.join(info.launch_params)})"
            )
        binds, ptrs = self.kernel_arguments(info, args)
        dims = self.launch_dims(info, values)
        argv = self.temp("kargs")
        arr = f"void* {argv}[{max(n, 1)}] = {{{', '.join(ptrs) or 'NULL'}}};"
        call = f"kiln_cuda_launch(&kiln_cuda_kernels, {index}, {dims}, {argv})"
        return f"({{ {' '.join(binds)} {arr} {call}; }})"

    def kernel_arguments(
        self, info: KernelInfo, args: tuple[E.PrimExpr, ...]
    ) -> tuple[list[str], list[str]]:
        """Locals holding each argument in the kernel parameter's type, and their addresses."""
        binds, ptrs = [], []
        for dtype, arg in zip(info.params, args):
            t = self.temp("ka")
            if dtype is None:
                binds.append(f"void* {t} = (void*)({self.expr(arg)});")
            else:
                value = self.to_storage(dtype, self.expr(arg))
                binds.append(f"{self.storage_type(dtype)} {t} = {value};")
            ptrs.append(f"&{t}")
        return binds, ptrs

    def launch_dims(self, info: KernelInfo, values: tuple[E.PrimExpr, ...]) -> str:
        """``gx, gy, gz, bx, by, bz, smem`` as int64 C expressions."""
        grid, block, smem = ["1"] * 3, ["1"] * 3, "0"
        for tag, v in zip(info.launch_params, values):
            code = f"(int64_t)({self.expr(v)})"
            if tag in GRID_TAGS:
                grid[GRID_TAGS[tag]] = code
            elif tag in BLOCK_TAGS:
                block[BLOCK_TAGS[tag]] = code
            elif tag == USE_DYN_SHARED_MEMORY:
                smem = code
            else:
                raise CodegenError(f"{info.symbol}: unknown launch parameter {tag!r}")
        return ", ".join([*grid, *block, smem])


def passed_to_kernel(s: S.Allocate) -> bool:
    """Whether a kernel launch in the allocation's body takes its buffer as an argument."""
    found = False

    def visit(n: object) -> None:
        nonlocal found
        if is_op(n, "launch_kernel") and any(a is s.buffer_var for a in n.args):  # type: ignore[attr-defined]
            found = True

    post_order_visit(s.body, visit)
    return found


def launching_functions(mod: IRModule) -> set[str]:
    """Names of the functions that launch a kernel, directly or through the functions they call."""
    calls: dict[str, set[str]] = {}
    found: set[str] = set()
    for gv, func in mod.functions.items():
        if not isinstance(func, PrimFunc):
            continue
        callees: set[str] = set()

        def visit(n: object, name: str = gv.name_hint, callees: set[str] = callees) -> None:
            if is_op(n, "launch_kernel"):
                found.add(name)
            elif isinstance(n, E.Call) and isinstance(n.op, GlobalVar):
                callees.add(n.op.name_hint)

        post_order_visit(func.body, visit)
        calls[gv.name_hint] = callees
    changed = True
    while changed:
        changed = False
        for name, callees in calls.items():
            if name not in found and callees & found:
                found.add(name)
                changed = True
    return found
