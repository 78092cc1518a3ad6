"""`Buffer`: a typed, shaped view of memory reached through a data pointer variable.

The storage scope lives on the data variable's pointer type (``T.handle("float32", "shared")``).
Strides are empty for a compact row-major buffer. A buffer is a binder: compared by where it is
declared (parameter buffer map, `DeclBuffer`), never by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kiln.errors import IRError, IRValueError
from kiln.ir.dtype import DataType
from kiln.ir.span import Span
from kiln.tir.expr import INT32, BufferLoad, BufferNode, IntImm, PrimExpr, Ramp, Var, convert
from kiln.tir.type import PointerType, PrimType


@dataclass(frozen=True, slots=True, eq=False)
class Buffer(BufferNode):
    """A multi-dimensional view of ``data`` with element type ``dtype``."""

    data: Var
    dtype: DataType
    shape: tuple[PrimExpr, ...]
    strides: tuple[PrimExpr, ...] = ()
    elem_offset: PrimExpr | None = None
    name: str = "buffer"
    data_alignment: int = 64
    offset_factor: int = 1
    axis_separators: tuple[int, ...] = ()
    span: Span | None = None
    _binder: ClassVar[bool] = True
    _ignore_fields: ClassVar[tuple[str, ...]] = ("name", "span")
    # NOTE: a buffer view used without a declaration (``T.Buffer(shape, data=p)``) is defined
    # where it is first used, provided its data pointer is already bound.
    _defined_through: ClassVar[str | None] = "data"

    def __post_init__(self) -> None:
        if not isinstance(self.data, Var):
            raise IRError(f"Buffer {self.name!r}: data must be a handle Var, got {self.data!r}")
        if not isinstance(self.dtype, DataType):
            object.__setattr__(self, "dtype", DataType.parse(self.dtype))
        object.__setattr__(self, "shape", _exprs(self.shape, f"Buffer {self.name!r} shape"))
        object.__setattr__(self, "strides", _exprs(self.strides, f"Buffer {self.name!r} strides"))
        if self.elem_offset is not None:
            object.__setattr__(self, "elem_offset", convert(self.elem_offset))

    @property
    def scope(self) -> str:
        """The storage scope of the data pointer ("global" by default)."""
        ty = self.data.type_annotation
        return ty.scope if isinstance(ty, PointerType) else "global"

    def layout_exprs(self) -> tuple[PrimExpr, ...]:
        """Shape, strides and element offset: the expressions that locate an element."""
        offset = () if self.elem_offset is None else (self.elem_offset,)
        return (*self.shape, *self.strides, *offset)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, indices: Any) -> BufferLoad:
        return BufferLoad(
            self, tuple(indices) if isinstance(indices, (tuple, list)) else (indices,)
        )

    def vload(self, indices: Any, dtype: str | DataType | None = None) -> BufferLoad:
        """``self[indices]``; a vector ``dtype`` loads that many consecutive elements from the
        last index (which becomes a `Ramp`), as TVM's ``vload`` does."""
        load = self[indices]
        if dtype is None:
            return load
        dt = DataType.parse(dtype)
        idx = load.indices
        per_index = self.dtype.lanes * (idx[-1].dtype.lanes if idx else 1)
        if idx and dt.lanes != per_index and idx[-1].dtype.lanes == 1:
            if dt.lanes % self.dtype.lanes:
                raise IRValueError(
                    f"vload of {dt} from buffer {self.name!r} of {self.dtype}: the lanes do "
                    "not divide"
                )
            idx = (
                *idx[:-1],
                Ramp(idx[-1], convert(1, idx[-1].dtype), dt.lanes // self.dtype.lanes),
            )
        return BufferLoad(self, idx, dt)

    def __repr__(self) -> str:
        return f"Buffer({self.name!r}, {self.dtype}, ndim={len(self.shape)}, scope={self.scope!r})"


def _exprs(values: Any, what: str) -> tuple[PrimExpr, ...]:
    if isinstance(values, (int, PrimExpr)):
        values = (values,)
    if not isinstance(values, (tuple, list)):
        raise IRError(f"{what}: expected a tuple of integers or expressions, got {values!r}")
    out = []
    for v in values:
        integer = isinstance(v, int) or (isinstance(v, PrimExpr) and v.dtype.is_integer)
        if not integer or isinstance(v, bool):
            raise IRError(f"{what}: every extent must be an integer, got {v!r}")
        out.append(convert(v))
    return tuple(out)


def check_extents(what: str, values: Any) -> tuple[PrimExpr, ...]:
    """``values`` as integer expressions; a negative constant is an `IRValueError`."""
    out = _exprs(values, what)
    for v in out:
        if isinstance(v, IntImm) and v.value < 0:
            raise IRValueError(f"{what}: a dimension cannot be negative, got {v.value}")
    return out


def decl_buffer(
    shape: Any,
    dtype: str | DataType = "float32",
    name: str = "buffer",
    data: Var | None = None,
    strides: Any = (),
    elem_offset: Any = None,
    scope: str = "",
    data_alignment: int = 64,
    offset_factor: int = 1,
    axis_separators: tuple[int, ...] = (),
    span: Span | None = None,
) -> Buffer:
    """A new buffer; makes its data pointer variable (``<name>_data``) unless ``data`` is given.

    A void dtype or a negative constant dimension is an `IRValueError`."""
    dt = DataType.parse(dtype)
    if dt.is_void:
        raise IRValueError(f"buffer {name!r}: dtype void has no elements; use e.g. float32")
    if scope == "global":
        scope = ""
    if data is None:
        data = Var(f"{name}_data", PointerType(PrimType(dt), scope), span=span)
    shape = check_extents(f"buffer {name!r} shape", shape)
    return Buffer(
        data,
        dt,
        shape,
        tuple(strides or ()),
        elem_offset,
        name,
        data_alignment,
        offset_factor,
        tuple(axis_separators),
        span,
    )


def index_dtype_of(shape: tuple[PrimExpr, ...]) -> DataType:
    """int64 when any dimension is int64, else int32."""
    return DataType("int", 64) if any(s.dtype.bits == 64 for s in shape) else INT32
