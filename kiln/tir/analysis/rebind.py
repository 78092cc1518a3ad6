"""Rename variables by identity, or give a whole function fresh copies of its variables."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kiln.ir.visitor import Mutator, pre_order_nodes
from kiln.tir.buffer import Buffer
from kiln.tir.expr import Var
from kiln.tir.function import PrimFunc


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


def defined_vars(node: Any) -> list[Var]:
    """The variables ``node`` defines (loop, let, allocation and declared-buffer variables), in
    the order their definitions appear."""
    found: dict[Var, None] = {}
    for n in pre_order_nodes(node):
        for name in getattr(n, "_def_fields", ()):
            value = getattr(n, name)
            var = value.data if isinstance(value, Buffer) else getattr(value, "var", value)
            if isinstance(var, Var):
                found.setdefault(var)
    return list(found)


def renew_defs(node: Any, defined: list[Var] | None = None) -> Any:
    """``node`` with a fresh copy of every variable it defines (loop, let, allocation and
    declared-buffer variables); variables it only uses stay as they are. A second copy of a
    statement then defines no variable twice. ``defined``: `defined_vars` of ``node`` (or of a
    statement defining the same variables), when the caller has it already."""
    fresh = {var: replace(var) for var in (defined_vars(node) if defined is None else defined)}
    return Rebind(fresh).visit(node) if fresh else node
