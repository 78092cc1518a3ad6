"""TIR substitution helpers over the visitor bases of `kiln.ir.visitor` (re-exported here)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kiln.ir.node import FrozenMap, Node
from kiln.ir.visitor import MemoMutator, Mutator, Visitor, post_order_visit, pre_order_nodes
from kiln.tir.expr import convert

__all__ = [
    "Mutator",
    "Substitute",
    "Visitor",
    "post_order_visit",
    "pre_order_nodes",
    "substitute",
    "substitute_func",
]


class Substitute(MemoMutator):
    """Replace variables (by identity) with expressions; buffers whose parts change are rebuilt
    (once: a node shared in several places stays shared, see `MemoMutator`)."""

    def __init__(self, vmap: dict[Any, Any]) -> None:
        super().__init__()
        self.vmap = vmap

    def visit_Var(self, v: Any) -> Any:  # SizeVar and other Var subclasses arrive here too
        return self.vmap.get(v, v)


def substitute(node: Any, vmap: dict[Any, Any]) -> Any:
    """``node`` with each variable of ``vmap`` replaced; Python numbers become immediates."""
    if not vmap:
        return node
    fixed = {k: (convert(v, k.dtype) if not isinstance(v, Node) else v) for k, v in vmap.items()}
    return Substitute(fixed).visit(node)


def substitute_func(func: Any, values: dict[Any, Any]) -> Any:
    """A PrimFunc with parameters / symbolic dims bound to values and removed from params."""
    params = tuple(p for p in func.params if p not in values)
    bmap = FrozenMap(
        {k: substitute(b, values) for k, b in func.buffer_map.items() if k not in values}
    )
    return replace(func, params=params, buffer_map=bmap, body=substitute(func.body, values))
