"""TIR expressions: variables, immediates, arithmetic, comparisons, calls, buffer loads, vectors.

Every expression has a ``dtype``. Python operators build nodes (``a + 1`` is ``Add``, ``a // b`` is
``FloorDiv``, ``a % b`` is ``FloorMod``, ``a < b`` is ``LT``); ``==`` stays identity, use
``a.eq(b)`` / ``a.ne(b)``. Python ints, floats and bools are converted where a dtype can be taken
from the other operand; elsewhere a bare Python float is an error. As in TVM, an operator whose
operands are a scalar and a vector broadcasts the scalar (``Ramp(x, 1, 4) + y`` adds
``Broadcast(y, 4)``); the node constructors themselves (``Add(a, b)``) take operands as given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from kiln.errors import IRError, IRValueError
from kiln.ir.dtype import DataType
from kiln.ir.function import GlobalVar
from kiln.ir.node import Node
from kiln.ir.op import Op
from kiln.ir.span import Span
from kiln.tir.type import PointerType, PrimType, TupleType

if TYPE_CHECKING:
    from kiln.tir.buffer import Buffer

BOOL = DataType("bool", 1)
INT32 = DataType("int", 32)
HANDLE = DataType("handle", 64)


class PrimExpr(Node):
    """Base of TIR expressions; subclasses are frozen dataclasses with a ``dtype`` field."""

    __slots__ = ()
    dtype: DataType

    def __add__(self, o: Any) -> PrimExpr:
        return _binary(Add, self, o)

    def __radd__(self, o: Any) -> PrimExpr:
        return _binary(Add, o, self)

    def __sub__(self, o: Any) -> PrimExpr:
        return _binary(Sub, self, o)

    def __rsub__(self, o: Any) -> PrimExpr:
        return _binary(Sub, o, self)

    def __mul__(self, o: Any) -> PrimExpr:
        return _binary(Mul, self, o)

    def __rmul__(self, o: Any) -> PrimExpr:
        return _binary(Mul, o, self)

    def __truediv__(self, o: Any) -> PrimExpr:
        return _binary(Div, self, o)

    def __rtruediv__(self, o: Any) -> PrimExpr:
        return _binary(Div, o, self)

    def __floordiv__(self, o: Any) -> PrimExpr:
        return _binary(FloorDiv, self, o)

    def __rfloordiv__(self, o: Any) -> PrimExpr:
        return _binary(FloorDiv, o, self)

    def __mod__(self, o: Any) -> PrimExpr:
        return _binary(FloorMod, self, o)

    def __rmod__(self, o: Any) -> PrimExpr:
        return _binary(FloorMod, o, self)

    def __neg__(self) -> PrimExpr:
        if self.dtype.is_uint:  # NOTE: -x of an unsigned value wraps: write it as 0 - x
            return Sub(convert(0, self.dtype), self)
        return Mul(self, convert(-1, self.dtype))

    def __lt__(self, o: Any) -> PrimExpr:
        return _binary(LT, self, o)

    def __le__(self, o: Any) -> PrimExpr:
        return _binary(LE, self, o)

    def __gt__(self, o: Any) -> PrimExpr:
        return _binary(GT, self, o)

    def __ge__(self, o: Any) -> PrimExpr:
        return _binary(GE, self, o)

    def __and__(self, o: Any) -> PrimExpr:
        return _binary(And, self, o) if self.dtype.is_bool else _bitwise("bitwise_and", self, o)

    def __or__(self, o: Any) -> PrimExpr:
        return _binary(Or, self, o) if self.dtype.is_bool else _bitwise("bitwise_or", self, o)

    def __xor__(self, o: Any) -> PrimExpr:
        return _bitwise("bitwise_xor", self, o)

    def __lshift__(self, o: Any) -> PrimExpr:
        return _bitwise("shift_left", self, o)

    def __rshift__(self, o: Any) -> PrimExpr:
        return _bitwise("shift_right", self, o)

    def __invert__(self) -> PrimExpr:
        if self.dtype.is_bool:
            return Not(self)
        return Call(self.dtype, Op.get("tir.bitwise_not"), (self,))

    def eq(self, o: Any) -> PrimExpr:
        """``self == o`` as an IR node (Python ``==`` is identity)."""
        return _binary(EQ, self, o)

    def ne(self, o: Any) -> PrimExpr:
        return _binary(NE, self, o)

    def astype(self, dtype: str | DataType) -> PrimExpr:
        dt = DataType.parse(dtype)
        return self if dt == self.dtype else Cast(dt, self)

    def __bool__(self) -> bool:
        raise IRError(
            f"a TIR expression ({type(self).__name__}) has no Python truth value; "
            "use T.if_then_else / tir.Select, or compare with `is None`"
        )


def _operands(a: Any, b: Any) -> tuple[PrimExpr, PrimExpr]:
    """The operands of a Python operator: a Python number takes the other operand's element
    type, and a scalar meeting a vector is broadcast to its lanes (``Ramp(x, 1, 4) + y``)."""
    if not isinstance(a, PrimExpr):
        a = convert(a, b.dtype.element_of())
    if not isinstance(b, PrimExpr):
        b = convert(b, a.dtype.element_of())
    la, lb = a.dtype.lanes, b.dtype.lanes
    if la != lb and 1 in (la, lb):
        return (Broadcast(a, lb), b) if la == 1 else (a, Broadcast(b, la))
    return a, b


def _binary(cls: type, a: Any, b: Any) -> PrimExpr:
    a, b = _operands(a, b)
    problem = division_problem(cls, a, b)
    if problem is not None:
        raise IRValueError(problem)
    return cls(a, b)


def _bitwise(name: str, a: PrimExpr, b: Any) -> PrimExpr:
    a, b = _operands(a, b)
    problem = bitwise_problem(name, a, b)
    if problem is not None:
        raise IRValueError(problem)
    return Call(a.dtype, Op.get(f"tir.{name}"), (a, b))


def convert(value: Any, dtype: DataType | str | None = None) -> PrimExpr:
    """An expression from ``value``: expressions pass through, Python numbers become immediates.

    ``dtype`` says what type a Python number takes; without it, ints are int32 (int64 when too
    large), bools are bool, and a float is an error because no dtype can be inferred.
    """
    if isinstance(value, PrimExpr):
        return value
    dt = DataType.parse(dtype) if dtype is not None else None
    if isinstance(value, bool):
        if dt is not None and dt.is_float:
            return FloatImm(dt, float(value))
        return IntImm(dt or BOOL, int(value))
    if isinstance(value, int):
        if dt is None:
            dt = INT32 if -(2**31) <= value < 2**31 else DataType("int", 64)
        if dt.is_float:
            return FloatImm(dt, float(value))
        return IntImm(dt, value)
    if isinstance(value, float):
        if dt is None:
            raise IRError(
                f"cannot use the Python float {value!r} as an expression: "
                "no dtype can be inferred; "
                "write tir.const(value, 'float32') or T.float32(value)"
            )
        if not dt.is_float:
            raise IRError(f"cannot use the Python float {value!r} as a {dt} value")
        return FloatImm(dt, value)
    if isinstance(value, str):
        if dt is not None and not dt.is_handle:
            raise IRError(f"cannot use the string {value!r} as a {dt} value")
        return StringImm(value)
    raise IRError(f"expected a TIR expression (PrimExpr) or Python number, got {value!r}")


def const(value: int | float | bool, dtype: DataType | str | None = None) -> PrimExpr:
    """A constant of ``dtype`` (default: int32 for ints, float32 for floats, bool for bools)."""
    if dtype is None and isinstance(value, float):
        dtype = "float32"
    return convert(value, dtype)


def _expr(value: Any, what: str) -> PrimExpr:
    if isinstance(value, PrimExpr):
        return value
    raise IRError(f"{what}: expected a TIR expression (PrimExpr), got {value!r}")


def _set(obj: Any, name: str, value: Any) -> None:
    object.__setattr__(obj, name, value)


@dataclass(frozen=True, slots=True, eq=False)
class Var(PrimExpr):
    """A variable, defined once (parameter, let, loop...). A handle may carry a pointer type.

    ``Var("p", PointerType(...))`` is accepted: the dtype becomes ``handle``.
    """

    name: str
    dtype: DataType = INT32
    type_annotation: PrimType | PointerType | TupleType | None = None
    span: Span | None = None
    _binder: ClassVar[bool] = True
    _ignore_fields: ClassVar[tuple[str, ...]] = ("name", "span")

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise IRError(f"Var name must be a string, got {self.name!r}")
        dt: Any = self.dtype
        if isinstance(dt, (PointerType, TupleType)):
            _set(self, "type_annotation", dt)
            _set(self, "dtype", HANDLE)
        elif isinstance(dt, PrimType):
            _set(self, "dtype", dt.dtype)
        elif not isinstance(dt, DataType):
            _set(self, "dtype", DataType.parse(dt))
        if self.type_annotation is None:
            _set(self, "type_annotation", PrimType(self.dtype))

    def __repr__(self) -> str:
        return f"Var({self.name!r}, {self.dtype})"


@dataclass(frozen=True, slots=True, eq=False)
class SizeVar(Var):
    """A variable known to be non-negative (a shape dimension)."""

    def __repr__(self) -> str:
        return f"SizeVar({self.name!r}, {self.dtype})"


@dataclass(frozen=True, slots=True, eq=False)
class IntImm(PrimExpr):
    """An integer (or bool) constant."""

    dtype: DataType
    value: int
    span: Span | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.dtype, DataType):
            _set(self, "dtype", DataType.parse(self.dtype))
        if isinstance(self.value, bool) or not isinstance(self.value, int):
            if not isinstance(self.value, bool):
                raise IRError(f"IntImm value must be an int, got {self.value!r}")
            _set(self, "value", int(self.value))
        if not (self.dtype.is_integer or self.dtype.is_bool or self.dtype.is_handle):
            raise IRError(f"IntImm needs an integer or bool dtype, got {self.dtype}")
        lo, hi = int_range(self.dtype)
        if not lo <= self.value <= hi:
            raise IRValueError(
                f"integer constant {self.value} does not fit {self.dtype} [{lo}, {hi}]"
            )

    def __repr__(self) -> str:
        return f"IntImm({self.dtype}, {self.value})"


@dataclass(frozen=True, slots=True, eq=False)
class FloatImm(PrimExpr):
    """A floating-point constant."""

    dtype: DataType
    value: float
    span: Span | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.dtype, DataType):
            _set(self, "dtype", DataType.parse(self.dtype))
        if not isinstance(self.value, (int, float)) or isinstance(self.value, bool):
            raise IRError(f"FloatImm value must be a number, got {self.value!r}")
        _set(self, "value", float(self.value))
        if not self.dtype.is_float:
            raise IRError(f"FloatImm needs a float dtype, got {self.dtype}")


@dataclass(frozen=True, slots=True, eq=False)
class StringImm(PrimExpr):
    """A string constant (for messages and symbol names); its dtype is handle."""

    value: str
    dtype: DataType = HANDLE
    span: Span | None = None


@dataclass(frozen=True, slots=True, eq=False)
class BinaryOp(PrimExpr):
    """Base of two-operand expressions; the dtype is inferred from the operands."""

    a: PrimExpr
    b: PrimExpr
    dtype: DataType = None  # type: ignore[assignment]
    span: Span | None = None
    _returns_bool: ClassVar[bool] = False

    def __post_init__(self) -> None:
        a, b = self.a, self.b
        if not isinstance(a, PrimExpr):
            a = convert(a, b.dtype if isinstance(b, PrimExpr) else None)
        if not isinstance(b, PrimExpr):
            b = convert(b, a.dtype)
        if a.dtype != b.dtype:
            raise IRError(
                f"{type(self).__name__}: operand dtypes differ ({a.dtype} vs {b.dtype}); "
                "cast one side explicitly"
            )
        _set(self, "a", a)
        _set(self, "b", b)
        if self.dtype is None:
            _set(self, "dtype", BOOL.with_lanes(a.dtype.lanes) if self._returns_bool else a.dtype)
        elif not isinstance(self.dtype, DataType):
            _set(self, "dtype", DataType.parse(self.dtype))


@dataclass(frozen=True, slots=True, eq=False)
class Add(BinaryOp):
    """``a + b``."""


@dataclass(frozen=True, slots=True, eq=False)
class Sub(BinaryOp):
    """``a - b``."""


@dataclass(frozen=True, slots=True, eq=False)
class Mul(BinaryOp):
    """``a * b``."""


@dataclass(frozen=True, slots=True, eq=False)
class Div(BinaryOp):
    """``a / b (truncating for integers)``."""


@dataclass(frozen=True, slots=True, eq=False)
class Mod(BinaryOp):
    """Truncated remainder of a / b."""


@dataclass(frozen=True, slots=True, eq=False)
class FloorDiv(BinaryOp):
    """``floor(a / b)``."""


@dataclass(frozen=True, slots=True, eq=False)
class FloorMod(BinaryOp):
    """``a - floor(a / b) * b``."""


@dataclass(frozen=True, slots=True, eq=False)
class Min(BinaryOp):
    """``min(a, b)``."""


@dataclass(frozen=True, slots=True, eq=False)
class Max(BinaryOp):
    """``max(a, b)``."""


ARITH_OPS = (Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max)
INT_DIVISIONS = (Div, Mod, FloorDiv, FloorMod)


@dataclass(frozen=True, slots=True, eq=False)
class Cast(PrimExpr):
    """``value`` converted to ``dtype``."""

    dtype: DataType
    value: PrimExpr
    span: Span | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.dtype, DataType):
            _set(self, "dtype", DataType.parse(self.dtype))
        _set(self, "value", _expr(self.value, "Cast"))


@dataclass(frozen=True, slots=True, eq=False)
class Select(PrimExpr):
    """``condition ? true_value : false_value``, both sides evaluated."""

    condition: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr
    dtype: DataType = None  # type: ignore[assignment]
    span: Span | None = None

    def __post_init__(self) -> None:
        _set(self, "condition", _expr(self.condition, "Select condition"))
        t, f = self.true_value, self.false_value
        t = convert(t, f.dtype if isinstance(f, PrimExpr) else None)
        _set(self, "true_value", t)
        _set(self, "false_value", convert(f, t.dtype))
        if self.dtype is None:
            _set(self, "dtype", t.dtype)


@dataclass(frozen=True, slots=True, eq=False)
class Let(PrimExpr):
    """``let var = value in body`` inside an expression."""

    var: Var
    value: PrimExpr
    body: PrimExpr
    span: Span | None = None
    _def_fields: ClassVar[tuple[str, ...]] = ("var",)

    def __post_init__(self) -> None:
        if not isinstance(self.var, Var):
            raise IRError(f"Let: expected a Var to bind, got {self.var!r}")
        _set(self, "value", _expr(self.value, "Let value"))
        _set(self, "body", _expr(self.body, "Let body"))

    @property
    def dtype(self) -> DataType:  # type: ignore[override]
        return self.body.dtype


@dataclass(frozen=True, slots=True, eq=False)
class Call(PrimExpr):
    """A call of a builtin `Op` or of another function of the module through its `GlobalVar`."""

    dtype: DataType
    op: Op | GlobalVar
    args: tuple[PrimExpr, ...] = ()
    span: Span | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.dtype, DataType):
            _set(self, "dtype", DataType.parse(self.dtype))
        op = self.op
        if isinstance(op, str):
            op = Op.get(op if "." in op else f"tir.{op}")
            _set(self, "op", op)
        if not isinstance(op, (Op, GlobalVar)):
            raise IRError(f"Call op must be an Op or GlobalVar, got {op!r}")
        args = tuple(a if isinstance(a, (PrimExpr, Node)) else convert(a) for a in self.args)
        _set(self, "args", args)

    @property
    def op_name(self) -> str:
        return self.op.name if isinstance(self.op, Op) else self.op.name_hint


class BufferNode(Node):
    """The base of `kiln.tir.buffer.Buffer`, its only subclass: declared here so that buffer
    loads and stores check their buffer without importing the buffer module, which builds on
    this one (a buffer's data variable, shape and strides are expressions)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True, eq=False)
class BufferLoad(PrimExpr):
    """``buffer[indices]``; a `Ramp` as the last index loads a vector."""

    buffer: Buffer
    indices: tuple[PrimExpr, ...]
    dtype: DataType = None  # type: ignore[assignment]
    span: Span | None = None

    def __post_init__(self) -> None:
        idx = _indices(self.buffer, self.indices, "BufferLoad")
        _set(self, "indices", idx)
        if self.dtype is None:
            lanes = idx[-1].dtype.lanes if idx else 1
            _set(self, "dtype", self.buffer.dtype.with_lanes(self.buffer.dtype.lanes * lanes))


def _indices(buffer: Any, indices: Any, what: str) -> tuple[PrimExpr, ...]:
    if not isinstance(buffer, BufferNode):
        raise IRError(f"{what}: expected a Buffer, got {buffer!r}")
    if not isinstance(indices, (tuple, list)):
        indices = (indices,)
    idx = tuple(convert(i) for i in indices)
    for i in idx:
        if not i.dtype.is_integer:
            raise IRError(f"{what}: index {i!r} of buffer {buffer.name!r} must be an integer")
    if len(idx) != len(buffer.shape):
        raise IRValueError(
            f"{what}: buffer {buffer.name!r} has {len(buffer.shape)} dimension(s) "
            f"but is indexed with {len(idx)}"
        )
    return idx


@dataclass(frozen=True, slots=True, eq=False)
class Ramp(PrimExpr):
    """The vector ``[base, base + stride, ..., base + (lanes-1)*stride]``."""

    base: PrimExpr
    stride: PrimExpr
    lanes: int
    dtype: DataType = None  # type: ignore[assignment]
    span: Span | None = None

    def __post_init__(self) -> None:
        base = (
            _expr(self.base, "Ramp base") if not isinstance(self.base, int) else convert(self.base)
        )
        _set(self, "base", base)
        _set(self, "stride", convert(self.stride, base.dtype))
        if self.dtype is None:
            _set(self, "dtype", base.dtype.with_lanes(self.lanes))


@dataclass(frozen=True, slots=True, eq=False)
class Broadcast(PrimExpr):
    """``value`` repeated in ``lanes`` lanes."""

    value: PrimExpr
    lanes: int
    dtype: DataType = None  # type: ignore[assignment]
    span: Span | None = None

    def __post_init__(self) -> None:
        _set(self, "value", _expr(self.value, "Broadcast value"))
        if self.dtype is None:
            _set(self, "dtype", self.value.dtype.with_lanes(self.lanes))


def int_range(dtype: DataType) -> tuple[int, int]:
    """The inclusive range of values an integer, bool or handle dtype can hold."""
    bits = dtype.bits
    if dtype.is_int:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if dtype.is_bool:
        return 0, 1
    return (0, (1 << bits) - 1) if dtype.is_uint else (-(1 << 63), (1 << 64) - 1)


def is_const_int(e: Any, value: int | None = None) -> bool:
    """True if ``e`` is an integer immediate (equal to ``value`` when given)."""
    return isinstance(e, IntImm) and (value is None or e.value == value)


def as_const_int(e: Any) -> int | None:
    """The value of a scalar integer immediate or a Python int, else None (bools included)."""
    if isinstance(e, IntImm):
        return e.value if e.dtype.lanes == 1 else None
    if isinstance(e, int) and not isinstance(e, bool):
        return e
    return None


def const_product(values: Any) -> int | None:
    """The product of constant integers (immediates or ints), or None when any is symbolic."""
    total = 1
    for x in values:
        v = as_const_int(x)
        if v is None:
            return None
        total *= v
    return total


# NOTE: the checks of the expression builders and the comparison and logical nodes live in
# `kiln.tir.expr_checks` and `kiln.tir.expr_logic` (keeping this file small); they are imported
# here, after everything those modules need from this one is defined, and re-exported, so
# ``from kiln.tir.expr import LT`` is the one way to name them.
from kiln.tir.expr_checks import bitwise_problem, division_problem  # noqa: E402
from kiln.tir.expr_logic import EQ, GE, GT, LE, LT, NE, And, Not, Or  # noqa: E402

CMP_OPS = (EQ, NE, LT, LE, GT, GE)
