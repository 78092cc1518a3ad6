"""Struct info: what the graph level knows about a value (its kind, dtype, rank and shape).

- `ObjectStructInfo`: any value.
- `PrimStructInfo(dtype, value)`: a scalar; ``value`` is a known `tir` expression or None.
- `ShapeStructInfo(values, ndim)`: a shape; ``values`` (int64 `tir` expressions) or only a rank.
- `TensorStructInfo(shape, dtype, ndim)`: a tensor; ``shape`` is a `ShapeExpr` (or a relax `Var`
  holding a shape) or None for a tensor of unknown shape; ``ndim`` is -1 when the rank is unknown;
  dtype ``void`` means unknown.
- `TupleStructInfo(fields)` and `FuncStructInfo(params, ret, purity)` (``params`` None: opaque).

Dims are `tir` int64 expressions over `tir.Var`s: the same variable objects PrimFunc buffer shapes
use. A symbolic variable met first in a struct info is *defined* there for structural comparison
(every struct info class lists its fields in ``_def_fields``), so two functions that name their
dims differently but use them alike compare equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from kiln.errors import IRError
from kiln.ir.dtype import DataType
from kiln.ir.node import Node
from kiln.ir.span import Span
from kiln.ir.structural import structural_equal
from kiln.tir.expr import IntImm, PrimExpr, convert

if TYPE_CHECKING:
    from kiln.relax.expr import Expr

INT64 = DataType("int", 64)
VOID = DataType("handle", 0)


def _set(obj: Any, name: str, value: Any) -> None:
    object.__setattr__(obj, name, value)


def _int64(e: Any) -> bool:
    dt = e.dtype
    return dt.bits == 64 and dt.kind == "int" and dt.lanes == 1


def as_dim(value: Any, what: str = "dimension") -> PrimExpr:
    """An int64 dimension expression from a Python int or an integer `tir` expression."""
    if isinstance(value, PrimExpr) and _int64(value):
        return value
    if isinstance(value, bool):
        raise IRError(f"a {what} must be an integer, got {value!r}")
    if isinstance(value, int):
        return IntImm(INT64, value)
    if isinstance(value, IntImm) and value.dtype.is_integer and value.dtype != INT64:
        return IntImm(INT64, value.value)
    if isinstance(value, PrimExpr):
        if value.dtype != INT64:
            raise IRError(
                f"a {what} must be an int64 expression, got {value!r} of dtype {value.dtype} "
                "(declare symbolic dims with T.int64())"
            )
        return value
    raise IRError(f"a {what} must be an int or an int64 tir expression, got {value!r}")


def as_dims(values: Any, what: str = "shape") -> tuple[PrimExpr, ...]:
    """A tuple of int64 dims from a list/tuple of ints and expressions."""
    if type(values) is tuple and all(isinstance(v, PrimExpr) and _int64(v) for v in values):
        return values
    if not isinstance(values, (list, tuple)):
        raise IRError(f"a {what} must be a list or tuple of dims, got {values!r}")
    return tuple(as_dim(v, f"{what} dimension") for v in values)


class StructInfo(Node):
    """Base of struct info nodes (compared structurally, never by identity)."""

    __slots__ = ()

    def same_as(self, other: Any) -> bool:
        """Structural equality (symbolic vars compared by identity)."""

        return structural_equal(self, other, map_free_vars=False)


@dataclass(frozen=True, slots=True, eq=False)
class ObjectStructInfo(StructInfo):
    """Any value at all (the top of the struct info lattice)."""

    span: Span | None = None


@dataclass(frozen=True, slots=True, eq=False)
class PrimStructInfo(StructInfo):
    """A scalar of ``dtype``; ``value`` is its known value as a `tir` expression, if any."""

    dtype: DataType = None  # type: ignore[assignment]
    value: PrimExpr | None = None
    span: Span | None = None
    _def_fields: ClassVar[tuple[str, ...]] = ("value",)

    def __post_init__(self) -> None:
        value = self.value
        if value is not None and not isinstance(value, PrimExpr):
            default = INT64 if isinstance(value, int) and not isinstance(value, bool) else None
            value = convert(value, self.dtype or default)
            _set(self, "value", value)
        if self.dtype is None:
            if value is None:
                raise IRError("PrimStructInfo needs a dtype or a value")
            _set(self, "dtype", value.dtype)
        elif not isinstance(self.dtype, DataType):
            _set(self, "dtype", DataType.parse(self.dtype))
        if value is not None and value.dtype != self.dtype:
            raise IRError(f"PrimStructInfo: value {value!r} is not of dtype {self.dtype}")


@dataclass(frozen=True, slots=True, eq=False)
class ShapeStructInfo(StructInfo):
    """A shape value: known ``values`` (int64 expressions), or only ``ndim`` (-1: unknown)."""

    values: tuple[PrimExpr, ...] | None = None
    ndim: int = -1
    span: Span | None = None
    _def_fields: ClassVar[tuple[str, ...]] = ("values",)

    def __post_init__(self) -> None:
        if self.values is not None:
            values = as_dims(self.values, "R.Shape")
            _set(self, "values", values)
            if self.ndim not in (-1, len(values)):
                raise IRError(f"ShapeStructInfo: ndim {self.ndim} but {len(values)} values")
            _set(self, "ndim", len(values))
        elif not isinstance(self.ndim, int) or self.ndim < -1:
            raise IRError(f"ShapeStructInfo: ndim must be an int >= -1, got {self.ndim!r}")


@dataclass(frozen=True, slots=True, eq=False)
class TensorStructInfo(StructInfo):
    """A tensor of ``dtype`` (void: unknown) with a known, rank-only or unknown shape.

    ``shape`` may be given as a list of dims; it is stored as a `ShapeExpr` (or a relax `Var`
    of shape struct info). ``ndim`` follows from a known shape.
    """

    shape: Expr | None = None
    dtype: DataType = DataType("float", 32)
    ndim: int = -1
    span: Span | None = None
    _def_fields: ClassVar[tuple[str, ...]] = ("shape",)

    def __post_init__(self) -> None:
        # NOTE: expressions carry struct info and a tensor's struct info carries a shape
        # expression: one of the two modules imports the other when it is first used
        from kiln.relax.expr import ShapeExpr, Var

        if not isinstance(self.dtype, DataType):
            _set(self, "dtype", DataType.parse(self.dtype if self.dtype is not None else "void"))
        shape = self.shape
        if isinstance(shape, (list, tuple)):
            shape = ShapeExpr(shape)
            _set(self, "shape", shape)
        if shape is None:
            if not isinstance(self.ndim, int) or self.ndim < -1:
                raise IRError(f"TensorStructInfo: ndim must be an int >= -1, got {self.ndim!r}")
            return
        if isinstance(shape, ShapeExpr):
            rank = len(shape.values)
        elif isinstance(shape, Var) and isinstance(shape.struct_info_, ShapeStructInfo):
            rank = shape.struct_info_.ndim
        else:
            raise IRError(f"TensorStructInfo: shape must be a shape expression, got {shape!r}")
        if self.ndim not in (-1, rank) and rank != -1:
            raise IRError(f"TensorStructInfo: ndim {self.ndim} does not match shape of rank {rank}")
        if rank != -1:
            _set(self, "ndim", rank)

    @property
    def dims(self) -> tuple[PrimExpr, ...] | None:
        """The dims when the shape is a known `ShapeExpr`, else None."""
        from kiln.relax.expr import ShapeExpr

        return self.shape.values if isinstance(self.shape, ShapeExpr) else None

    @property
    def is_unknown_dtype(self) -> bool:
        return self.dtype.is_void


@dataclass(frozen=True, slots=True, eq=False)
class TupleStructInfo(StructInfo):
    """A tuple whose fields have the given struct infos."""

    fields: tuple[StructInfo, ...] = ()
    span: Span | None = None
    _def_fields: ClassVar[tuple[str, ...]] = ("fields",)

    def __post_init__(self) -> None:
        fields = tuple(self.fields)
        for f in fields:
            if not isinstance(f, StructInfo):
                raise IRError(f"TupleStructInfo fields must be struct info, got {f!r}")
        _set(self, "fields", fields)


@dataclass(frozen=True, slots=True, eq=False)
class FuncStructInfo(StructInfo):
    """A function: parameter struct infos (None: an opaque function), return struct info and
    purity (False: it may have side effects)."""

    params: tuple[StructInfo, ...] | None = None
    ret: StructInfo = None  # type: ignore[assignment]
    purity: bool = True
    span: Span | None = None
    _def_fields: ClassVar[tuple[str, ...]] = ("params", "ret")

    def __post_init__(self) -> None:
        if self.params is not None:
            _set(self, "params", tuple(self.params))
        if self.ret is None:
            _set(self, "ret", ObjectStructInfo())

    @staticmethod
    def opaque_func(ret: StructInfo | None = None, purity: bool = False) -> FuncStructInfo:
        """A function whose parameters are unknown (e.g. a packed function)."""
        return FuncStructInfo(None, ret or ObjectStructInfo(), purity)

    @property
    def is_opaque(self) -> bool:
        return self.params is None


def is_te_ready(sinfo: Any) -> bool:
    """True for a tensor with known dims and dtype, or a tuple of such (what TE can compute)."""
    if isinstance(sinfo, TensorStructInfo):
        return sinfo.dims is not None and not sinfo.dtype.is_void
    if isinstance(sinfo, TupleStructInfo):
        return all(is_te_ready(f) for f in sinfo.fields)
    return False


def tensor(shape: Any = None, dtype: Any = "float32", ndim: int = -1) -> TensorStructInfo:
    """Shorthand for `TensorStructInfo`."""
    return TensorStructInfo(shape, dtype, ndim)


UNIT = TupleStructInfo(())
"""The struct info of ``()``: what a call that returns nothing produces."""
