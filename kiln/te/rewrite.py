"""Rewriting TE expressions: substituting axes and redirecting or lowering tensor reads.

Plain substitution of axes is `kiln.tir.substitute` (visitors dispatch along the class hierarchy,
so an `AxisVar` is a `Var` to it); `rewrite_loads` also maps every tensor read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kiln.ir.visitor import MemoMutator
from kiln.te.tensor import ProducerLoad
from kiln.tir.expr import PrimExpr
from kiln.tir.functor import substitute


class _Rewriter(MemoMutator):
    """Substitutes variables and axes by identity, then maps each tensor read (each node once:
    shared reads stay shared)."""

    def __init__(
        self,
        vmap: dict[Any, PrimExpr],
        on_load: Callable[[ProducerLoad], PrimExpr] | None,
    ) -> None:
        super().__init__()
        self.vmap = vmap
        self.on_load = on_load

    def visit_Var(self, v: Any) -> Any:
        return self.vmap.get(v, v)

    def visit_ProducerLoad(self, n: ProducerLoad) -> PrimExpr:
        n = self.generic_visit(n)
        return self.on_load(n) if self.on_load is not None else n


def substitute_axes(expr: Any, vmap: dict[Any, PrimExpr]) -> Any:
    """``expr`` with each variable or axis of ``vmap`` (by identity) replaced."""
    return substitute(expr, vmap)


def rewrite_loads(
    expr: Any,
    on_load: Callable[[ProducerLoad], PrimExpr],
    vmap: dict[Any, PrimExpr] | None = None,
) -> Any:
    """``expr`` with variables substituted, then every tensor read passed through ``on_load``.

    ``on_load`` sees the read with its indices already rewritten and returns its replacement.
    """
    return _Rewriter(vmap or {}, on_load).visit(expr)
