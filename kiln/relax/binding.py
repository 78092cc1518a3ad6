"""Bindings and binding blocks: the statements of a `SeqExpr`.

`VarBinding` binds a variable to a value; `MatchCast` binds a variable to a value after checking
(at run time) that it fits a struct info, defining the symbolic variables that struct info
introduces. A `DataflowBlock` holds pure bindings only; its `DataflowVar`s are invisible after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kiln.errors import IRError
from kiln.ir.function import GlobalVar
from kiln.ir.node import Node
from kiln.ir.span import Span
from kiln.relax.expr import Expr, Var
from kiln.relax.struct_info import StructInfo


class Binding(Node):
    """Base of bindings: every binding defines ``var``."""

    __slots__ = ()
    var: Var
    value: Expr


@dataclass(frozen=True, slots=True, eq=False)
class VarBinding(Binding):
    """``var = value``."""

    var: Var
    value: Expr
    span: Span | None = None
    _def_fields: ClassVar[tuple[str, ...]] = ("var",)

    def __post_init__(self) -> None:
        if not isinstance(self.var, Var):
            raise IRError(f"VarBinding needs a relax Var, got {self.var!r}")
        if not isinstance(self.value, (Expr, GlobalVar)):
            raise IRError(f"VarBinding value must be a relax expression, got {self.value!r}")


@dataclass(frozen=True, slots=True, eq=False)
class MatchCast(Binding):
    """``var = R.match_cast(value, struct_info)``: ``value`` checked against ``struct_info``."""

    var: Var
    value: Expr
    struct_info: StructInfo
    span: Span | None = None
    _def_fields: ClassVar[tuple[str, ...]] = ("var", "struct_info")

    def __post_init__(self) -> None:
        if not isinstance(self.var, Var):
            raise IRError(f"MatchCast needs a relax Var, got {self.var!r}")
        if not isinstance(self.struct_info, StructInfo):
            raise IRError(f"MatchCast needs struct info, got {self.struct_info!r}")


@dataclass(frozen=True, slots=True, eq=False)
class BindingBlock(Node):
    """Bindings evaluated in order (any effects allowed)."""

    bindings: tuple[Binding, ...]
    span: Span | None = None

    def __post_init__(self) -> None:
        bindings = tuple(self.bindings)
        for b in bindings:
            if not isinstance(b, Binding):
                raise IRError(f"a binding block holds bindings, got {b!r}")
        object.__setattr__(self, "bindings", bindings)


@dataclass(frozen=True, slots=True, eq=False)
class DataflowBlock(BindingBlock):
    """A block of pure bindings whose `DataflowVar`s do not outlive it."""
