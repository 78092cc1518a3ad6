"""DeadCodeElimination: drop unused bindings and unreachable functions.

A binding whose variable is never used and whose value has no side effects (pure operators,
calls of pure functions, tuples, branches without impure calls) is removed, repeatedly, until
none is left -- but not a ``match_cast`` whose struct info names symbolic dims: it may be where
they are defined (a shape read from a tensor at run time) for later bindings. Blocks left empty
disappear. Impure calls (packed functions, PrimFuncs called directly) stay. Module functions
that no entry function reaches (entry: the names given, else every function with a
``global_symbol``) are removed, PrimFuncs included.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from kiln.ir.function import BaseFunc
from kiln.ir.module import IRModule
from kiln.ir.transform import Pass, PassContext
from kiln.ir.visitor import pre_order_nodes
from kiln.relax.analysis.free_vars import all_global_vars, has_side_effects, use_counts
from kiln.relax.analysis.struct_info import tir_vars
from kiln.relax.binding import MatchCast
from kiln.relax.expr import Function
from kiln.relax.expr_functor import ExprMutator
from kiln.tir.expr import Call as TirCall


class _Drop(ExprMutator):
    def __init__(self, mod: IRModule, uses: dict[int, int]) -> None:
        super().__init__(mod)
        self.uses = uses
        self.mod = mod
        self.dropped = 0

    def visit_binding(self, b: Any) -> None:
        defines_dims = isinstance(b, MatchCast) and bool(tir_vars(b.struct_info))
        unused = self.uses.get(id(b.var), 0) == 0 and not defines_dims
        if unused and not has_side_effects(b.value, self.mod):
            self.dropped += 1
            return
        super().visit_binding(b)


def remove_unused_bindings(func: Function, mod: IRModule) -> Function:
    """``func`` without its dead bindings (to a fixpoint)."""
    while True:
        mut = _Drop(mod, use_counts(func))
        new = mut.visit(func)
        if mut.dropped == 0:
            return new
        func = new


def _callees(func: BaseFunc) -> list[str]:
    if isinstance(func, Function):
        return [gv.name_hint for gv in all_global_vars(func)]
    return [
        n.op.name_hint
        for n in pre_order_nodes(getattr(func, "body", ()))
        if isinstance(n, TirCall) and hasattr(n.op, "name_hint")
    ]


def reachable(mod: IRModule, entries: Sequence[str]) -> set[str]:
    """Names of the functions reachable from ``entries``."""
    seen: set[str] = set()
    stack = [e for e in entries if e in mod]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        stack.extend(c for c in _callees(mod[name]) if c in mod and c not in seen)
    return seen


@dataclass(frozen=True)
class DeadCodeElimination(Pass):
    """Remove dead bindings and unreachable functions (module docstring)."""

    entry_functions: Sequence[str] | None = None
    name: ClassVar[str] = "dead-code-elimination"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        changed = {}
        for gv, func in mod.items():
            if isinstance(func, Function):
                new = remove_unused_bindings(func, mod)
                if new is not func:
                    changed[gv] = new
        out = mod.update_all(changed) if changed else mod
        entries = self.entry_functions
        if entries is None:
            entries = [gv.name_hint for gv, f in out.items() if f.global_symbol is not None]
        keep = reachable(out, list(entries))
        for gv in list(out):
            if gv.name_hint not in keep:
                out = out.remove(gv)
        return out
