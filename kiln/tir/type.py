"""Types of TIR values: a primitive type, a (typed) pointer, or a tuple (``()`` is void).

Types are values: equal types compare equal. ``T.handle("float32", "shared.dyn")`` is
``PointerType(PrimType(float32), "shared.dyn")``.
"""

from __future__ import annotations

from dataclasses import dataclass

from kiln.ir.dtype import DataType


@dataclass(frozen=True, slots=True)
class PrimType:
    """The type of a scalar or vector value of ``dtype``."""

    dtype: DataType

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", DataType.parse(self.dtype))

    def __str__(self) -> str:
        return str(self.dtype)


@dataclass(frozen=True, slots=True)
class PointerType:
    """A pointer to ``element_type`` in memory of ``storage_scope`` ("" means global)."""

    element_type: PrimType | PointerType | TupleType
    storage_scope: str = ""

    @property
    def scope(self) -> str:
        return self.storage_scope or "global"

    def __str__(self) -> str:
        scope = f", {self.storage_scope!r}" if self.storage_scope else ""
        return f"ptr({self.element_type}{scope})"


@dataclass(frozen=True, slots=True)
class TupleType:
    """A tuple of types; the empty tuple is ``void``."""

    fields: tuple[PrimType | PointerType | TupleType, ...] = ()

    def __str__(self) -> str:
        return "void" if not self.fields else f"({', '.join(map(str, self.fields))})"


Type = PrimType | PointerType | TupleType
VOID = TupleType(())


def pointer_to(elem: DataType | str, scope: str = "") -> PointerType:
    """``PointerType(PrimType(elem), scope)``."""
    return PointerType(PrimType(DataType.parse(elem)), scope)
