"""SplitHostDevice: move every marked device region of a function into a kernel PrimFunc of its own.

Precondition: a well-formed module in which `AnnotateDeviceRegions` wrapped the device regions
of host functions in ``AttrStmt(device_target, "target", 0, region)``.
Postcondition: no such marker remains. Each marked region ``R`` of a function ``f`` became

- a new PrimFunc ``f_kernel`` (then ``f_kernel_1``, ``f_kernel_2``..., never clashing with an
  existing name; ``f`` is the function's ``global_symbol`` when it has one) whose body is ``R``
  (thread scopes included) and whose parameters are the variables ``R`` uses but does not define:
  first the handles (data pointers of the buffers it touches), then the scalars, each group
  sorted by name. The parameters are fresh copies of those variables, so no variable is shared
  between two functions. Attributes: ``target`` = the marker's device target, ``tir.noalias``
  and ``tir.is_global_func`` = True. It returns nothing.
- in ``f``, the statement ``Evaluate(Call(int32, f_kernel, (v1, v2, ...)))`` passing the
  original variables in parameter order. `LowerDeviceKernelLaunch` turns this call into a
  kernel launch and gives the kernel its launch attributes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from kiln.ir.dtype import int32
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.names import NameSupply
from kiln.ir.transform import Pass, PassContext
from kiln.ir.visitor import Mutator
from kiln.tir import attrs
from kiln.tir.analysis.device import is_region_marker
from kiln.tir.analysis.rebind import Rebind
from kiln.tir.analysis.vars import free_vars
from kiln.tir.expr import Call, Var
from kiln.tir.function import PrimFunc
from kiln.tir.stmt import AttrStmt, Evaluate, Stmt
from kiln.tir.type import VOID


def kernel_params(used: list[Var]) -> list[Var]:
    """Handles first, then scalars; each group sorted by name (stable on first use)."""
    return sorted(used, key=lambda v: (not v.dtype.is_handle, v.name))


@dataclass(frozen=True)
class SplitHostDevice(Pass):
    """Outline each marked device region into a kernel PrimFunc (see module docstring)."""

    name: ClassVar[str] = "split-host-device"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        taken = NameSupply(gv.name_hint for gv in mod)
        out = mod
        kernels: list[tuple[GlobalVar, PrimFunc]] = []
        for gv, func in mod.items():
            if not isinstance(func, PrimFunc):
                continue
            splitter = _Splitter(func.global_symbol or gv.name_hint, taken)
            body = splitter.visit(func.body)
            if body is not func.body:
                out = out.update(gv, replace(func, body=body))
                kernels.extend(splitter.kernels)
        for kgv, kernel in kernels:
            out = out.update(kgv, kernel)
        return out


class _Splitter(Mutator):
    def __init__(self, base: str, taken: NameSupply) -> None:
        super().__init__()
        self.base = base
        self.taken = taken
        self.kernels: list[tuple[GlobalVar, PrimFunc]] = []

    def visit(self, n: Any) -> Any:
        if is_region_marker(n):
            return self.split(n)
        if not isinstance(n, Stmt):
            return n  # expressions hold no statements
        return super().visit(n)

    def split(self, marker: AttrStmt) -> Stmt:
        params = kernel_params(free_vars(marker.body))
        rebind = Rebind({v: replace(v) for v in params})
        body = rebind.visit(marker.body)
        fattrs = {attrs.TARGET: marker.node, attrs.NOALIAS: True, attrs.IS_GLOBAL_FUNC: True}
        kernel = PrimFunc(tuple(rebind.vmap[v] for v in params), body, VOID, attrs=fattrs)
        gv = GlobalVar(self.fresh_name())
        self.kernels.append((gv, kernel))
        return Evaluate(Call(int32, gv, tuple(params)), span=marker.span)

    def fresh_name(self) -> str:
        return self.taken.fresh(f"{self.base}_kernel")
