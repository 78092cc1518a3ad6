"""Type constructors of the T namespace: dtype literals, fresh variables and buffer declarations.

`T.int32` & co are `DTypeCtor`s: used bare they are types (``a: T.int32``); called they make a
literal (``T.int32(5)``), a cast (``T.float32(x)``) or a fresh variable (``m = T.int32()``).
``T.handle(...)``, ``T.Buffer(...)`` and ``T.int32()`` return *specs*: lazy descriptions the
parser turns into a named variable or buffer. NOTE: specs never validate when created, because
Python evaluates parameter annotations at ``def`` time, before the parser can report a mistake
at its source location; they validate when the parser materializes them.
"""

from __future__ import annotations

import inspect
import math
import struct
from dataclasses import dataclass
from typing import Any, Callable

from kiln.errors import IRError, IRValueError
from kiln.ir.dtype import DataType
from kiln.ir.span import Span
from kiln.tir.buffer import Buffer, decl_buffer
from kiln.tir.expr import PrimExpr, SizeVar, Var, convert
from kiln.tir.type import PointerType, PrimType

HANDLE = DataType("handle", 64)


def as_dtype(value: Any) -> DataType:
    """A `DataType` from ``"float32"``, ``T.float32`` or a `DataType`."""
    if isinstance(value, DTypeCtor):
        return value.dtype
    if isinstance(value, (str, DataType)):
        return DataType.parse(value)
    raise IRError(f'expected a dtype such as "float32" or T.float32, got {value!r}')


def as_scope(scope: Any) -> str:
    """A storage scope string; ``"global"`` is stored as ``""`` (as `decl_buffer` does)."""
    if not isinstance(scope, str):
        raise IRError(f'a storage scope must be a string such as "shared", got {scope!r}')
    return "" if scope == "global" else scope


def bind_args(stub: Callable[..., Any], what: str, args: tuple, kwargs: dict) -> dict[str, Any]:
    """Bind call arguments to ``stub``'s signature, naming ``what`` in the error."""
    try:
        bound = inspect.signature(stub).bind(*args, **kwargs)
    except TypeError as e:
        raise IRError(f"{what}: {e}") from None
    bound.apply_defaults()
    return dict(bound.arguments)


@dataclass(frozen=True)
class VarSpec:
    """A variable the parser makes when the script names it (``m = T.int32()``)."""

    dtype: Any
    pointee: Any = None
    scope: Any = "global"
    size_var: bool = False
    is_handle: bool = False

    def var_type(self) -> tuple[DataType, PrimType | PointerType]:
        """The dtype and type annotation of the variable (validates the spec)."""
        if not self.is_handle:
            dt = as_dtype(self.dtype)
            if dt.is_void:
                raise IRError("a variable cannot have dtype void; use e.g. T.int32 or T.handle")
            return dt, PrimType(dt)
        if self.pointee is None:
            return HANDLE, PrimType(HANDLE)
        return HANDLE, PointerType(PrimType(as_dtype(self.pointee)), as_scope(self.scope))

    def make(self, name: str, span: Span | None = None) -> Var:
        """A new variable called ``name``."""
        dt, ty = self.var_type()
        cls = SizeVar if self.size_var else Var
        return cls(name, dt, ty, span)


_FLOAT_FORMATS = {
    "float16": (5, 10, False),
    "bfloat16": (8, 7, False),
    "float32": (8, 23, False),
    "float8_e5m2": (5, 2, False),
    "float8_e4m3fn": (4, 3, True),
}
"""Float dtype -> (exponent bits, mantissa bits, whether it has no infinity: its top exponent
holds numbers and the all-ones pattern is NaN)."""


def float_overflows(value: float, dtype: DataType) -> bool:
    """Whether the finite number ``value`` rounds (to nearest even) past the largest finite value
    of float ``dtype``, to infinity or, for a type without one, to NaN. float64 holds every
    finite Python float.

    NOTE: a type narrower than float32 is computed in C ``float``s (`kiln.codegen.c_prelude`),
    so a constant reaches it rounded to float32 first, and so it is judged here."""
    fmt = _FLOAT_FORMATS.get(str(dtype.element_of()))
    if fmt is None or not math.isfinite(value):
        return False
    e, m, no_inf = fmt
    if e + m < 31:
        try:
            value = struct.unpack("f", struct.pack("f", value))[0]
        except OverflowError:  # beyond float32's range
            return True
    emax = (1 << (e - 1)) - 1 + no_inf  # NOTE: a no-inf type uses its top exponent for numbers
    top = (1 << m) - 1 - no_inf  # the largest mantissa (all ones is NaN in a no-inf type)
    largest = (1 + top / (1 << m)) * 2.0**emax
    midpoint = largest + 2.0 ** (emax - m - 1)  # halfway to the next (unrepresentable) value
    # a tie rounds to the even mantissa: up (overflow) when the largest mantissa is odd
    return abs(value) >= midpoint if top % 2 else abs(value) > midpoint


def check_float_range(value: Any, dtype: DataType, what: str) -> None:
    """Raise `IRValueError` when the Python number ``value`` written as ``what`` is finite but
    out of float ``dtype``'s range; ``inf`` and ``nan`` (written explicitly) are allowed."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            over = float_overflows(float(value), dtype)
        except OverflowError:  # an int too large for a Python float
            over = True
        if over:
            no_inf = _FLOAT_FORMATS.get(str(dtype.element_of()), (0, 0, False))[2]
            raise IRValueError(
                f"{what} is out of the range of {dtype.element_of()} (it would become "
                f'{"NaN" if no_inf else "inf"}); write "inf" for an infinity'
            )


class DTypeCtor:
    """``T.int32``, ``T.float32x4``...: a dtype that also builds literals, casts and variables."""

    __slots__ = ("dtype", "name")

    def __init__(self, name: str) -> None:
        self.dtype = DataType.parse(name)
        self.name = name

    def __call__(self, value: Any = None, *, is_size_var: bool = False) -> Any:
        if value is None:
            return VarSpec(self.dtype, size_var=is_size_var)
        if isinstance(value, PrimExpr):
            return value.astype(self.dtype)
        if isinstance(value, str) and self.dtype.is_float:
            value = float(value)  # "inf", "-inf", "nan"
        if isinstance(value, float) and not self.dtype.is_float:
            raise IRError(f"T.{self.name} needs an integer, got the float {value!r}")
        if not isinstance(value, (bool, int, float)):
            raise IRError(f"T.{self.name} expects a number or an expression, got {value!r}")
        if self.dtype.is_float:
            check_float_range(value, self.dtype, f"T.{self.name}({value!r})")
        return convert(value, self.dtype)

    def spec(self) -> VarSpec:
        """The variable spec of a bare ``T.int32`` annotation."""
        return VarSpec(self.dtype)

    def __str__(self) -> str:
        return str(self.dtype)

    def __repr__(self) -> str:
        return f"T.{self.name}"


class HandleCtor(DTypeCtor):
    """``T.handle``: an opaque pointer type; ``T.handle("float32", "shared")`` is typed."""

    __slots__ = ()

    def __call__(  # type: ignore[override]
        self, dtype: Any = None, storage_scope: Any = "global", *, is_size_var: bool = False
    ) -> VarSpec:
        return VarSpec(HANDLE, dtype, storage_scope, is_size_var, is_handle=True)

    def spec(self) -> VarSpec:
        return VarSpec(HANDLE, is_handle=True)


def _buffer_stub(
    shape: Any,
    dtype: Any = "float32",
    data: Any = None,
    strides: Any = None,
    elem_offset: Any = None,
    scope: Any = "global",
    align: int = -1,
    offset_factor: int = 0,
    buffer_type: str = "",
    axis_separators: Any = None,
) -> None:
    """The signature shared by T.Buffer, T.decl_buffer, T.alloc_buffer and T.match_buffer."""


@dataclass(frozen=True)
class BufferSpec:
    """A buffer the parser makes when the script names it (``A: T.Buffer((16,), "float32")``)."""

    what: str
    args: tuple
    kwargs: dict

    def arguments(self) -> dict[str, Any]:
        return bind_args(_buffer_stub, self.what, self.args, self.kwargs)

    def has_data(self) -> bool:
        return self.arguments()["data"] is not None

    def build(self, name: str, span: Span | None = None) -> Buffer:
        """A new buffer called ``name`` (with a new data pointer unless ``data=`` was given)."""
        a = self.arguments()
        dt = as_dtype(a["dtype"])
        data = a["data"]
        if data is not None and not (isinstance(data, Var) and data.dtype == HANDLE):
            hint = f" such as {data.name}.data" if isinstance(data, Buffer) else ""
            raise IRError(f"{self.what}: data= must be a pointer variable{hint}, got {data!r}")
        shape = a["shape"]
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        for dim in shape:
            if isinstance(dim, float) or (isinstance(dim, PrimExpr) and not dim.dtype.is_integer):
                raise IRError(f"{self.what}: every dimension must be an integer, got {dim!r}")
        for key in ("align", "offset_factor"):
            if not isinstance(a[key], int) or isinstance(a[key], bool):
                raise IRError(f"{self.what}: {key}= must be an integer, got {a[key]!r}")
        seps = a["axis_separators"]
        return decl_buffer(
            shape,
            dt,
            name,
            data,
            tuple(a["strides"] or ()),
            a["elem_offset"],
            as_scope(a["scope"]),
            a["align"] if a["align"] > 0 else 64,
            a["offset_factor"] if a["offset_factor"] > 0 else 1,
            tuple(seps or ()),
            span,
        )


class BufferCtor:
    """``T.Buffer``: ``T.Buffer((m, n), "float32")`` is a buffer parameter or a buffer view."""

    def __call__(self, *args: Any, **kwargs: Any) -> BufferSpec:
        return BufferSpec("T.Buffer", args, kwargs)

    def __repr__(self) -> str:
        return "T.Buffer"
