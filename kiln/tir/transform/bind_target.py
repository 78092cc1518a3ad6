"""BindTarget: give every PrimFunc a ``"target"`` attribute, placing it on the host or the device.

Precondition: a well-formed module.
Postcondition: every PrimFunc carries ``"target"`` (a `Target` object; a string or dict already
there is read as one). For a host-kind target (``c``) every function without one gets that
target. For a device target ``D`` with host ``H`` (``H`` is ``D``'s host, else ``c``), a *device
call* is a call inside a thread scope (``T.thread_binding``, ``T.launch_thread``) or anywhere in a
function placed on the device; every other call is a *host call*. Then:

1. a function that already has a target keeps it; an exposed one (``global_symbol``) on a device
   kind without a host gains ``H``;
2. an exposed function gets ``D`` with host ``H`` (its thread scopes become kernels later);
3. a private function called only from host code gets ``H`` -- or ``D`` with host ``H`` when it
   contains thread scopes itself (NOTE: the host cannot run them; like an exposed function, its
   scopes are split into kernels and it stays a host function);
4. a private function called only from device code gets ``D``;
5. a private function called from both gets ``D``, and a copy ``<name>_host`` (fresh variables;
   ``<name>_host_1``... if taken) gets ``H`` (as in 3); every host call to it, in every function
   that runs on the host (copies included), now calls the copy;
6. a private function nobody calls gets ``D``.

Where a function is called from is found by propagation over the call graph: a call outside thread
scopes happens in every context its caller runs in, so a helper called only by a device helper is
a device function too.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.names import NameSupply
from kiln.ir.target import Target
from kiln.ir.transform import Pass, PassContext
from kiln.ir.visitor import Mutator, Visitor
from kiln.tir import attrs
from kiln.tir.analysis.device import as_target, func_target, has_device_region, is_device_region
from kiln.tir.analysis.rebind import fresh_copy
from kiln.tir.expr import Call
from kiln.tir.function import PrimFunc
from kiln.tir.stmt import AttrStmt, For, Stmt

HOST, DEVICE = "host", "device"


@dataclass(frozen=True)
class BindTarget(Pass):
    """Attach a target to every PrimFunc (see module docstring for the rules)."""

    target: Target | str | dict[str, Any]
    name: ClassVar[str] = "bind-target"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        target = as_target(self.target)
        if target.is_host_kind:
            plain = target.without_host()
            return mod.update_all(
                {
                    gv: f.with_attr(attrs.TARGET, t if (t := func_target(f)) is not None else plain)
                    for gv, f in mod.items()
                    if isinstance(f, PrimFunc)
                }
            )
        return _Binder(mod, target.without_host(), target.host_target()).run()


class _Binder:
    def __init__(self, mod: IRModule, device: Target, host: Target) -> None:
        self.mod = mod
        self.device, self.host = device, host
        self.with_host = device.with_host(host)
        self.funcs = {gv.name_hint: f for gv, f in mod.items() if isinstance(f, PrimFunc)}
        self.sites = {name: _call_sites(f.body) for name, f in self.funcs.items()}
        self.fixed = {name: self.fixed_context(name) for name in self.funcs}

    def run(self) -> IRModule:
        contexts = self.contexts()
        targets = {name: self.choose(name, contexts[name]) for name in self.funcs}
        taken = NameSupply(gv.name_hint for gv in self.mod)
        copies: dict[str, GlobalVar] = {}
        for name in self.funcs:
            if contexts[name] == {HOST, DEVICE} and self.fixed[name] is None:
                copies[name] = GlobalVar(taken.fresh(f"{name}_host"))
        out = self.mod
        for name, func in self.funcs.items():
            func = func.with_attr(attrs.TARGET, targets[name])
            if copies and _runs_on_host(targets[name]):
                func = replace(func, body=_HostCalls(copies).visit(func.body))
            out = out.update(self.mod.get_global_var(name), func)
        for name, gv in copies.items():
            func = self.funcs[name]
            host = self.with_host if has_device_region(func.body) else self.host
            copy = fresh_copy(func).with_attr(attrs.TARGET, host)
            out = out.update(gv, replace(copy, body=_HostCalls(copies).visit(copy.body)))
        return out

    def fixed_context(self, name: str) -> str | None:
        """The context of a function whose placement does not depend on its callers."""
        func = self.funcs[name]
        if func_target(func) is not None:
            return HOST if _runs_on_host(self.choose(name, set())) else DEVICE
        return HOST if func.global_symbol is not None else None

    def contexts(self) -> dict[str, set[str]]:
        """Where each function's body runs: propagated from fixed functions along calls."""
        ctx: dict[str, set[str]] = {}
        for name in self.funcs:
            fixed = self.fixed[name]
            ctx[name] = {fixed} if fixed else set()
        changed = True
        while changed:
            changed = False
            for caller, sites in self.sites.items():
                for callee, in_device in sites:
                    if callee not in ctx or self.fixed[callee] is not None:
                        continue
                    add = {DEVICE} if in_device else ctx[caller]
                    if not add <= ctx[callee]:
                        ctx[callee] |= add
                        changed = True
        return ctx

    def choose(self, name: str, where: set[str]) -> Target:
        """The target of function ``name``, which runs in the contexts ``where``."""
        func = self.funcs[name]
        target = func_target(func)
        if target is not None:
            exposed = func.global_symbol is not None
            if exposed and not target.is_host_kind and target.host is None:
                return target.with_host(self.host)
            return target
        if func.global_symbol is not None:
            return self.with_host
        if where == {HOST}:
            return self.with_host if has_device_region(func.body) else self.host
        return self.device


def _runs_on_host(target: Target) -> bool:
    return target.is_host_kind or target.host is not None


def _call_sites(body: Stmt) -> list[tuple[str, bool]]:
    """(callee name, inside a thread scope) for every call of a module function in ``body``."""
    finder = _Sites()
    finder.visit(body)
    return finder.sites


class _Sites(Visitor):
    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.sites: list[tuple[str, bool]] = []

    def visit_Call(self, e: Call) -> None:
        if isinstance(e.op, GlobalVar):
            self.sites.append((e.op.name_hint, self.depth > 0))
        for a in e.args:
            self.visit(a)

    def visit_AttrStmt(self, s: AttrStmt) -> None:
        self.scoped(s, s.value)

    def visit_For(self, s: For) -> None:
        self.scoped(s, s.min, s.extent)

    def scoped(self, s: Any, *host_exprs: Any) -> None:
        if not is_device_region(s):
            self.generic_visit(s)
            return
        for e in host_exprs:
            self.visit(e)
        self.depth += 1
        self.visit(s.body)
        self.depth -= 1


class _HostCalls(Mutator):
    """Redirect host calls (outside thread scopes) of duplicated functions to their host copy."""

    def __init__(self, copies: dict[str, GlobalVar]) -> None:
        super().__init__()
        self.copies = copies

    def visit_Call(self, e: Call) -> Call:
        new = self.generic_visit(e)
        if isinstance(e.op, GlobalVar) and e.op.name_hint in self.copies:
            return replace(new, op=self.copies[e.op.name_hint])
        return new

    def visit_AttrStmt(self, s: AttrStmt) -> Stmt:
        if not is_device_region(s):
            return self.generic_visit(s)
        value = self.visit(s.value)
        return s if value is s.value else replace(s, value=value)

    def visit_For(self, s: For) -> Stmt:
        if not is_device_region(s):
            return self.generic_visit(s)
        lo, ext = self.visit(s.min), self.visit(s.extent)
        return s if lo is s.min and ext is s.extent else replace(s, min=lo, extent=ext)
