"""TIR comparison and logical expressions: ``EQ``, ``NE``, ``LT``, ``LE``, ``GT``, ``GE``, ``And``,
``Or``, ``Not`` (boolean results).

Import them from `kiln.tir.expr`, which re-exports them (this module is loaded by it, after the
base classes it needs; importing this module first would be a circular import).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kiln.ir.dtype import DataType
from kiln.ir.span import Span
from kiln.tir.expr import BinaryOp, PrimExpr, _expr, _set


@dataclass(frozen=True, slots=True, eq=False)
class EQ(BinaryOp):
    """``a == b``."""

    _returns_bool: ClassVar[bool] = True


@dataclass(frozen=True, slots=True, eq=False)
class NE(BinaryOp):
    """``a != b``."""

    _returns_bool: ClassVar[bool] = True


@dataclass(frozen=True, slots=True, eq=False)
class LT(BinaryOp):
    """``a < b``."""

    _returns_bool: ClassVar[bool] = True


@dataclass(frozen=True, slots=True, eq=False)
class LE(BinaryOp):
    """``a <= b``."""

    _returns_bool: ClassVar[bool] = True


@dataclass(frozen=True, slots=True, eq=False)
class GT(BinaryOp):
    """``a > b``."""

    _returns_bool: ClassVar[bool] = True


@dataclass(frozen=True, slots=True, eq=False)
class GE(BinaryOp):
    """``a >= b``."""

    _returns_bool: ClassVar[bool] = True


@dataclass(frozen=True, slots=True, eq=False)
class And(BinaryOp):
    """Logical and of booleans."""

    _returns_bool: ClassVar[bool] = True


@dataclass(frozen=True, slots=True, eq=False)
class Or(BinaryOp):
    """Logical or of booleans."""

    _returns_bool: ClassVar[bool] = True


@dataclass(frozen=True, slots=True, eq=False)
class Not(PrimExpr):
    """Logical negation of a boolean."""

    a: PrimExpr
    dtype: DataType = None  # type: ignore[assignment]
    span: Span | None = None

    def __post_init__(self) -> None:
        _set(self, "a", _expr(self.a, "Not"))
        if self.dtype is None:
            _set(self, "dtype", self.a.dtype)
