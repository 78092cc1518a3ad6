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

from dataclasses import replace
from typing import Any, ClassVar

from kiln.ir.dtype import int32
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.transform import Pass, PassContext
from kiln.tir.buffer import Buffer
from kiln.tir.expr import Call, Var
from kiln.tir.function import PrimFunc
from kiln.tir.functor import Mutator, Visitor
from kiln.tir.stmt import AttrStmt, Evaluate, IterVar, Stmt
from kiln.tir.transform.annotate_device_regions import is_region_marker
from kiln.tir.type import VOID


class Rebind(Mutator):
    """Replace variables by identity; with ``fresh``, every variable met gets a fresh copy.

    Buffers are memoized so each buffer maps to exactly one new buffer (two loads of one buffer
    still share it after the rewrite, which structural comparison and codegen rely on).
    """

    def __init__(self, vmap: dict[Var, Var] | None = None, fresh: bool = False) -> None:
        super().__init__()
        self.vmap: dict[Var, Any] = dict(vmap or {})
        self.fresh = fresh
        self.buffers: dict[Buffer, Buffer] = {}

    def visit_Var(self, v: Var) -> Any:
        hit = self.vmap.get(v)
        if hit is None and self.fresh:
            hit = self.vmap[v] = replace(v)
        return v if hit is None else hit

    def visit_Buffer(self, b: Buffer) -> Buffer:
        hit = self.buffers.get(b)
        if hit is None:
            hit = self.buffers[b] = self.generic_visit(b)
        return hit


def fresh_copy(func: PrimFunc) -> PrimFunc:
    """``func`` with every variable and buffer replaced by a fresh copy (same names and types)."""
    return Rebind(fresh=True).visit(func)


def free_vars(node: Any) -> list[Var]:
    """Variables ``node`` (a statement or expression) uses but does not define, by first use."""
    finder = _FreeVars()
    finder.visit(node)
    return [v for v in finder.used if v not in finder.defined]


def defined_vars(stmt: Stmt) -> set[Var]:
    """Variables ``stmt`` defines (loop, let, allocation and thread variables)."""
    finder = _FreeVars()
    finder.visit(stmt)
    return finder.defined


class _FreeVars(Visitor):
    def __init__(self) -> None:
        super().__init__()
        self.used: dict[Var, None] = {}
        self.defined: set[Var] = set()

    def visit_Var(self, v: Var) -> None:
        self.used.setdefault(v, None)

    def generic_visit(self, n: Any) -> None:
        for name in getattr(n, "_def_fields", ()):
            value = getattr(n, name)
            for item in value if isinstance(value, tuple) else (value,):
                if isinstance(item, IterVar):
                    item = item.var
                if isinstance(item, Var):
                    self.defined.add(item)
        super().generic_visit(n)


def kernel_params(used: list[Var]) -> list[Var]:
    """Handles first, then scalars; each group sorted by name (stable on first use)."""
    return sorted(used, key=lambda v: (not v.dtype.is_handle, v.name))


class SplitHostDevice(Pass):
    """Outline each marked device region into a kernel PrimFunc (see module docstring)."""

    name: ClassVar[str] = "split-host-device"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        taken = {gv.name_hint for gv in mod}
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
    def __init__(self, base: str, taken: set[str]) -> None:
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
        attrs = {"target": marker.node, "tir.noalias": True, "tir.is_global_func": True}
        kernel = PrimFunc(tuple(rebind.vmap[v] for v in params), body, VOID, attrs=attrs)
        gv = GlobalVar(self.fresh_name())
        self.kernels.append((gv, kernel))
        return Evaluate(Call(int32, gv, tuple(params)), span=marker.span)

    def fresh_name(self) -> str:
        name, k = f"{self.base}_kernel", 0
        while name in self.taken:
            k += 1
            name = f"{self.base}_kernel_{k}"
        self.taken.add(name)
        return name
