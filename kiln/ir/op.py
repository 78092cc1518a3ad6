"""The operator registry: each builtin `Op` is a named singleton carrying attributes.

Attributes used so far: ``effect`` (a `CallEffect`), ``c_symbol`` (the C function an op lowers to,
if any), ``num_args`` (-1: variadic). Layers register their ops when imported (`kiln.tir.builtin`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar

from kiln.errors import IRValueError
from kiln.ir.node import Node


class CallEffect(Enum):
    """What a call does besides computing its value (ordered from none to everything)."""

    EXPR_ANNOTATION = 0
    PURE = 1
    READ_STATE = 2
    UPDATE_STATE = 3
    OPAQUE = 4
    EMBED_INFO = 5
    CONTROL_JUMP = 6


@dataclass(frozen=True, eq=False)
class Op(Node):
    """A registered primitive operation; look one up with ``Op.get(name)``."""

    name: str
    attrs: dict[str, Any] = field(default_factory=dict)
    _registry: ClassVar[dict[str, Op]] = {}

    @staticmethod
    def register(name: str, **attrs: Any) -> Op:
        """Register (or return the already registered) op ``name`` with ``attrs``."""
        op = Op._registry.get(name)
        if op is None:
            op = Op(name, dict(attrs))
            Op._registry[name] = op
        else:
            op.attrs.update(attrs)
        return op

    @staticmethod
    def get(name: str) -> Op:
        op = Op._registry.get(name)
        if op is None:
            near = [n for n in Op._registry if n.split(".")[-1] == name.split(".")[-1]]
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise IRValueError(f"unknown operator {name!r}{hint}")
        return op

    @staticmethod
    def list_ops() -> list[str]:
        return sorted(Op._registry)

    def get_attr(self, key: str, default: Any = None) -> Any:
        return self.attrs.get(key, default)

    @property
    def effect(self) -> CallEffect:
        return self.attrs.get("effect", CallEffect.OPAQUE)

    def __repr__(self) -> str:
        return f"Op({self.name!r})"
