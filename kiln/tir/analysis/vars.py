"""Which variables a statement or expression uses, defines, or leaves free."""

from __future__ import annotations

from typing import Any

from kiln.ir.visitor import Visitor
from kiln.tir.expr import Var
from kiln.tir.stmt import IterVar, Stmt


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


def used_vars(node: Any) -> list[Var]:
    """Every variable ``node`` mentions (defined there or not), by first use."""
    finder = _FreeVars()
    finder.visit(node)
    return list(finder.used)


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
