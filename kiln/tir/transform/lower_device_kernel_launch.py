"""LowerDeviceKernelLaunch: route every call between functions by where caller and callee run.

Precondition: a well-formed module after `SplitHostDevice`; PrimFuncs carry ``"target"``
(functions without one are left alone). A function *runs on the host* when its target is a host
kind (``c``) or has a host attached (``cuda -host=c``); its *effective target* is then the host
target, else its own target. A *real kernel* is a device function containing thread scopes.
Each kernel has at most one ``shared.dyn`` allocation (`MergeSharedMemoryAllocations`).

Postcondition: every ``Call(GlobalVar)`` is one of

- a kernel launch, when a host caller calls a real kernel (always, even if the two targets match
  once the host is stripped) or calls a device function of another device type::

      Call(int32, tir.launch_kernel, (StringImm(symbol), *args, *launch_values))

  ``launch_values`` are the extents of the kernel's ``tir.kernel_launch_params`` (in that order)
  with the kernel's parameters replaced by the call's arguments; the dynamic shared memory size
  in bytes comes last when the kernel has a ``shared.dyn`` allocation;
- a direct call, when the effective targets are equal (host helper from the host, device helper
  from the device);
- ``call_extern(StringImm(name), *args)`` when they differ but share a device type; the callee
  gets ``global_symbol = name`` if it had none, so the name resolves.

A device caller of a real kernel, or of a function of another device type, is an error.

Functions are then annotated: a kernel (a real kernel, or a device function launched from the
host) gets ``calling_conv`` = 2, ``global_symbol`` (kept, else its name), ``tir.is_global_func``
= True and ``tir.kernel_launch_params`` = its thread tags in order of first appearance, plus
``"tir.use_dyn_shared_memory"`` last when it allocates ``shared.dyn``; buffer parameters become
their data pointers. Other device functions get ``calling_conv`` = 0 (device subroutines). Host
functions get their effective (host) target as ``"target"``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from kiln.errors import PassError
from kiln.ir.dtype import int32
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.op import Op
from kiln.ir.target import Target
from kiln.ir.transform import Pass, PassContext
from kiln.ir.visitor import Mutator, Visitor
from kiln.tir import attrs
from kiln.tir.analysis.device import allocation_bytes, func_target, thread_tag
from kiln.tir.analysis.vars import free_vars
from kiln.tir.expr import Call, IntImm, PrimExpr, StringImm, Var
from kiln.tir.function import EMPTY_MAP, PrimFunc
from kiln.tir.functor import substitute
from kiln.tir.stmt import Allocate, AttrStmt, For
from kiln.tir.type import PointerType

PASS = "lower-device-kernel-launch"


@dataclass
class _Info:
    """What callers need to know about one function."""

    name: str
    func: PrimFunc
    target: Target  # effective target
    on_host: bool
    tags: tuple[str, ...] = ()
    extents: tuple[PrimExpr, ...] = ()  # per tag, then the dyn shared bytes if any
    dyn_shmem: bool = False

    @property
    def is_kernel(self) -> bool:
        return bool(self.tags)

    @property
    def symbol(self) -> str:
        return self.func.global_symbol or self.name

    @property
    def params(self) -> tuple[Var, ...]:
        """Parameters as callers pass them: a buffer parameter is its data pointer."""
        bmap = self.func.buffer_map
        return tuple(bmap[p].data if p in bmap else p for p in self.func.params)


@dataclass(frozen=True)
class LowerDeviceKernelLaunch(Pass):
    """Turn host-to-kernel calls into launches and annotate kernels (see module docstring)."""

    name: ClassVar[str] = PASS

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        infos = {
            gv.name_hint: _info(gv.name_hint, f)
            for gv, f in mod.items()
            if isinstance(f, PrimFunc) and f.get_attr(attrs.TARGET) is not None
        }
        launched: set[str] = set()
        externs: set[str] = set()
        out = mod
        for gv, func in mod.items():
            info = infos.get(gv.name_hint)
            if info is None:
                continue
            router = _Router(infos, info)
            body = router.visit(func.body)
            launched |= router.launched
            externs |= router.externs
            out = out.update(gv, func.with_body(body))
        for name, info in infos.items():
            gv = out.get_global_var(name)
            new = _annotate(out[gv], info, name in launched, name in externs)  # type: ignore
            out = out.update(gv, new)
        return out


def _info(name: str, func: PrimFunc) -> _Info:
    target = func_target(func)
    on_host = target.is_host_kind or target.host is not None
    info = _Info(name, func, target.host_target() if on_host else target, on_host)
    if on_host:
        return info
    finder = _Threads()
    finder.visit(func.body)
    if len(finder.dyn) > 1:
        raise PassError(
            PASS,
            f"kernel {name!r} has {len(finder.dyn)} shared.dyn allocations; a kernel launch "
            "passes one dynamic shared memory size: run MergeSharedMemoryAllocations first",
        )
    info.tags = tuple(finder.tags)
    info.extents = (*finder.tags.values(), *finder.dyn)
    info.dyn_shmem = bool(finder.dyn)
    if info.dyn_shmem and not info.tags:
        raise PassError(PASS, f"{name!r}: a shared.dyn allocation outside any thread scope")
    params = set(info.params)
    for tag, extent in zip((*info.tags, attrs.USE_DYN_SHARED_MEMORY), info.extents):
        inner = [v.name for v in free_vars(extent) if v not in params]
        if inner:
            raise PassError(
                PASS,
                f"kernel {name!r}: the launch extent of {tag} depends on {', '.join(inner)}, "
                "defined inside the kernel; launch extents must be computable from its parameters",
            )
    return info


class _Threads(Visitor):
    """Thread tags with their extents (first binding wins), and shared.dyn allocation sizes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: dict[str, PrimExpr] = {}
        self.dyn: list[PrimExpr] = []

    def visit_AttrStmt(self, s: AttrStmt) -> None:
        tag = thread_tag(s)
        if tag is not None:
            self.tags.setdefault(tag, s.value)
        self.generic_visit(s)

    def visit_For(self, s: For) -> None:
        tag = thread_tag(s)
        if tag is not None:
            if not (isinstance(s.min, IntImm) and s.min.value == 0):
                raise PassError(
                    PASS, f"thread-bound loop over {tag} must start at 0, starts at {s.min}"
                )
            self.tags.setdefault(tag, s.extent)
        self.generic_visit(s)

    def visit_Allocate(self, s: Allocate) -> None:
        ty = s.buffer_var.type_annotation
        if isinstance(ty, PointerType) and ty.storage_scope == "shared.dyn":
            self.dyn.append(allocation_bytes(s))
        self.generic_visit(s)


class _Router(Mutator):
    """Rewrites the calls of one caller (see module docstring for the four shapes)."""

    def __init__(self, infos: dict[str, _Info], caller: _Info) -> None:
        super().__init__()
        self.infos = infos
        self.caller = caller
        self.launched: set[str] = set()
        self.externs: set[str] = set()

    def visit_Call(self, e: Call) -> PrimExpr:
        new = self.generic_visit(e)
        callee = self.infos.get(e.op.name_hint) if isinstance(e.op, GlobalVar) else None
        if callee is None:
            return new
        caller = self.caller
        if caller.on_host and callee.is_kernel:
            return self.launch(new, callee)
        if not caller.on_host and callee.is_kernel:
            raise PassError(
                PASS,
                f"device function {caller.name!r} calls kernel {callee.name!r}: a kernel can "
                "only be launched from host code",
            )
        if caller.target == callee.target:
            return new
        if caller.target.device_type == callee.target.device_type:
            self.externs.add(callee.name)
            return Call(new.dtype, Op.get("tir.call_extern"), (StringImm(callee.name), *new.args))
        if caller.on_host:
            return self.launch(new, callee)
        raise PassError(
            PASS,
            f"device function {caller.name!r} ({caller.target}) calls {callee.name!r}, which "
            f"runs on {callee.target}: device code can only call functions of its own device",
        )

    def launch(self, call: Call, callee: _Info) -> Call:
        if len(call.args) != len(callee.params):
            raise PassError(
                PASS,
                f"{self.caller.name!r} calls kernel {callee.name!r} with {len(call.args)} "
                f"arguments; it takes {len(callee.params)}",
            )
        binding = dict(zip(callee.params, call.args))
        values = tuple(substitute(x, binding) for x in callee.extents)
        self.launched.add(callee.name)
        args = (StringImm(callee.symbol), *call.args, *values)
        return Call(int32, Op.get("tir.launch_kernel"), args, call.span)


def _annotate(func: PrimFunc, info: _Info, launched: bool, extern: bool) -> PrimFunc:
    """The function with the attributes its role needs (see module docstring)."""
    if info.on_host:
        func = func.with_attr(attrs.TARGET, info.target)  # type: ignore[assignment]
    elif info.is_kernel or launched:
        tags = (*info.tags, attrs.USE_DYN_SHARED_MEMORY) if info.dyn_shmem else info.tags
        func = replace(func, params=info.params, buffer_map=EMPTY_MAP)
        kernel = {
            attrs.CALLING_CONV: attrs.KERNEL_LAUNCH,
            attrs.GLOBAL_SYMBOL: info.symbol,
            attrs.KERNEL_LAUNCH_PARAMS: tags,
            attrs.IS_GLOBAL_FUNC: True,
        }
        func = func.with_attr(kernel)  # type: ignore[assignment]
    else:
        func = func.with_attr(attrs.CALLING_CONV, attrs.DEVICE_SUBROUTINE)  # type: ignore[assignment]
    if extern and func.global_symbol is None:
        func = func.with_attr(attrs.GLOBAL_SYMBOL, info.name)  # type: ignore[assignment]
    return func
