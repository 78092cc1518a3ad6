"""Rewriting TE expressions: substituting axes and redirecting or lowering tensor reads.

`tir.substitute` dispatches on class names and so does not see `AxisVar`s; these mutators do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kiln.te.tensor import ProducerLoad
from kiln.tir.expr import PrimExpr
from kiln.tir.functor import Mutator


class _Rewriter(Mutator):
    """Substitutes variables and axes by identity, then maps each tensor read."""

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

    visit_SizeVar = visit_Var
    visit_AxisVar = visit_Var

    def visit_ProducerLoad(self, n: ProducerLoad) -> PrimExpr:
        n = self.generic_visit(n)
        return self.on_load(n) if self.on_load is not None else n


def substitute_axes(expr: Any, vmap: dict[Any, PrimExpr]) -> Any:
    """``expr`` with each variable or axis of ``vmap`` (by identity) replaced."""
    if not vmap:
        return expr
    return _Rewriter(vmap, None).visit(expr)


def rewrite_loads(
    expr: Any,
    on_load: Callable[[ProducerLoad], PrimExpr],
    vmap: dict[Any, PrimExpr] | None = None,
) -> Any:
    """``expr`` with variables substituted, then every tensor read passed through ``on_load``.

    ``on_load`` sees the read with its indices already rewritten and returns its replacement.
    """
    return _Rewriter(vmap or {}, on_load).visit(expr)
