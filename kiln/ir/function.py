"""`GlobalVar` (the name of a module-level function) and the base of functions."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kiln.errors import IRValueError
from kiln.ir.node import Attrs, Node, as_attrs
from kiln.ir.span import Span


@dataclass(frozen=True, slots=True, eq=False)
class GlobalVar(Node):
    """Names a function of an `IRModule`; calls refer to callees through it.

    Compared by name across modules (two modules with a function ``main`` match), by identity
    elsewhere.
    """

    name_hint: str
    span: Span | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name_hint, str) or not self.name_hint:
            raise IRValueError(f"GlobalVar needs a non-empty name, got {self.name_hint!r}")

    def __repr__(self) -> str:
        return f"GlobalVar({self.name_hint!r})"


class BaseFunc(Node):
    """Common behaviour of functions (PrimFunc, graph-level Function): an `attrs` map.

    Subclasses are frozen dataclasses with an ``attrs: Attrs`` field.
    """

    __slots__ = ()

    def with_attr(self, key: str | dict[str, Any], value: Any = None) -> BaseFunc:
        """A copy with ``key`` set (or every item of a dict set)."""
        attrs: Attrs = as_attrs(self.attrs)
        items = key.items() if isinstance(key, dict) else [(key, value)]
        for k, v in items:
            attrs = attrs.with_item(k, v)
        return replace(self, attrs=attrs)  # type: ignore[type-var]

    def without_attr(self, key: str) -> BaseFunc:
        return replace(self, attrs=as_attrs(self.attrs).without(key))  # type: ignore

    def get_attr(self, key: str, default: Any = None) -> Any:
        return as_attrs(self.attrs).get(key, default)

    @property
    def global_symbol(self) -> str | None:
        """The exported name, or None for a private (module-internal) function."""
        return self.get_attr("global_symbol")

    @property
    def is_private(self) -> bool:
        return self.global_symbol is None
