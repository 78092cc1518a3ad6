"""Builders for common TIR calls and expressions (what ``T.exp``, ``T.call_extern``... make)."""

from __future__ import annotations

from typing import Any

from kiln.errors import IRError, IRValueError
from kiln.ir.dtype import DataType
from kiln.ir.op import Op
from kiln.tir import builtin
from kiln.tir.buffer import Buffer
from kiln.tir.expr import (
    Call,
    Cast,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    PrimExpr,
    Select,
    StringImm,
    convert,
    division_problem,
)

HANDLE = DataType("handle", 64)


def call_intrin(dtype: str | DataType, name: str, *args: Any) -> Call:
    """A call of the builtin ``name`` (with or without the ``tir.`` prefix)."""
    op = Op.get(name if name.startswith("tir.") else f"tir.{name}")
    return Call(DataType.parse(dtype), op, tuple(convert(a) for a in args))


def call_extern(dtype: str | DataType, func_name: str, *args: Any) -> Call:
    """A call of the C function ``func_name``."""
    return Call(
        DataType.parse(dtype),
        builtin.op("call_extern"),
        (StringImm(func_name), *(convert(a) for a in args)),
    )


def call_pure_extern(dtype: str | DataType, func_name: str, *args: Any) -> Call:
    return Call(
        DataType.parse(dtype),
        builtin.op("call_pure_extern"),
        (StringImm(func_name), *(convert(a) for a in args)),
    )


def call_packed(func_name: str, *args: Any, dtype: str = "int32") -> Call:
    """A call of the globally registered packed function ``func_name``."""
    return Call(
        DataType.parse(dtype),
        builtin.op("call_packed"),
        (StringImm(func_name), *(convert(a) for a in args)),
    )


def call_cpacked(func_name: str, *args: Any, dtype: str = "int32") -> Call:
    """A call of the packed function ``func_name`` defined in the same library."""
    return Call(
        DataType.parse(dtype),
        builtin.op("call_cpacked"),
        (StringImm(func_name), *(convert(a) for a in args)),
    )


def address_of(load: PrimExpr) -> Call:
    """The address of a buffer element (a typed pointer)."""
    return Call(HANDLE, builtin.op("address_of"), (load,))


def prefetch(load: PrimExpr) -> Call:
    """A hint to fetch the cache line of the element ``load`` reads (never faults, so the element
    may lie past the buffer's end; nothing is read)."""
    return Call(DataType.parse("int32"), builtin.op("prefetch"), (load,))


def assert_in_range(value: PrimExpr, lo: PrimExpr, hi: PrimExpr, what: str) -> Call:
    """``value``, checked at run time to lie in ``[lo, hi)`` (all of one dtype); a failure raises
    `KernelIndexError` naming ``what``, the value and the range (`LowerIntrin` places the check)."""
    return Call(value.dtype, builtin.op("assert_in_range"), (value, lo, hi, StringImm(what)))


def access_ptr(buf: Buffer, mask: str = "rw", offset: Any = 0, extent: Any = None) -> Call:
    """``tvm_access_ptr(type_annotation, data, offset, extent, rw_mask)`` for ``buf``."""
    bits = (1 if "r" in mask else 0) | (2 if "w" in mask else 0)
    ext = extent if extent is not None else _numel(buf)
    return Call(
        HANDLE,
        builtin.op("tvm_access_ptr"),
        (
            type_annotation(buf.dtype),
            buf.data,
            convert(offset),
            convert(ext),
            IntImm(DataType("int", 32), bits),
        ),
    )


def _numel(buf: Buffer) -> PrimExpr:
    n: PrimExpr = convert(1, buf.shape[0].dtype if buf.shape else None)
    for s in buf.shape:
        n = n * s if not (isinstance(n, IntImm) and n.value == 1) else s
    return n


def type_annotation(dtype: str | DataType) -> Call:
    return Call(DataType.parse(dtype), builtin.op("type_annotation"), ())


def reinterpret(dtype: str | DataType, value: Any) -> Call:
    return Call(DataType.parse(dtype), builtin.op("reinterpret"), (convert(value),))


def isnullptr(value: Any) -> Call:
    return Call(DataType("bool", 1), builtin.op("isnullptr"), (convert(value),))


def if_then_else(cond: Any, t: Any, f: Any) -> Call:
    """``cond ? t : f`` evaluating only the chosen side."""
    t = convert(t, f.dtype if isinstance(f, PrimExpr) else None)
    f = convert(f, t.dtype)
    if t.dtype != f.dtype:
        raise IRError(f"if_then_else: branch dtypes differ ({t.dtype} vs {f.dtype})")
    return Call(t.dtype, builtin.op("if_then_else"), (convert(cond), t, f))


def select(cond: Any, t: Any, f: Any) -> Select:
    return Select(convert(cond), t, f)


def math(name: str, *args: Any) -> Call:
    """A math intrinsic (``exp``, ``sqrt``, ``pow``...); dtype follows the first argument."""
    first = next((a for a in args if isinstance(a, PrimExpr)), None)
    if first is None:
        raise IRError(f"{name}: expected at least one TIR expression argument, got {args!r}")
    conv = tuple(convert(a, first.dtype) for a in args)
    dtype = first.dtype
    if name in ("isnan", "isinf", "isfinite"):
        dtype = DataType("bool", 1).with_lanes(dtype.lanes)
    return Call(dtype, builtin.op(name), conv)


def exp(x: Any) -> Call:
    return math("exp", x)


def sqrt(x: Any) -> Call:
    return math("sqrt", x)


def _division(cls: type, a: Any, b: Any) -> PrimExpr:
    """``cls(a, b)``; a constant zero integer divisor is an `IRValueError`."""
    node = cls(a, b)
    problem = division_problem(cls, node.a, node.b)
    if problem is not None:
        raise IRValueError(problem)
    return node


def floordiv(a: Any, b: Any) -> PrimExpr:
    return _division(FloorDiv, a, b)


def floormod(a: Any, b: Any) -> PrimExpr:
    return _division(FloorMod, a, b)


def truncdiv(a: Any, b: Any) -> PrimExpr:
    return _division(Div, a, b)


def truncmod(a: Any, b: Any) -> PrimExpr:
    return _division(Mod, a, b)


def max_(a: Any, b: Any) -> PrimExpr:
    return Max(a, b)


def min_(a: Any, b: Any) -> PrimExpr:
    return Min(a, b)


def cast(dtype: str | DataType, value: Any) -> PrimExpr:
    return Cast(DataType.parse(dtype), convert(value))


def max_value(dtype: str | DataType) -> PrimExpr:
    """The largest finite value of ``dtype``."""
    dt = DataType.parse(dtype)
    if dt.is_bool:
        return convert(True, dt)
    if dt.is_int:
        return convert((1 << (dt.bits - 1)) - 1, dt)
    if dt.is_uint:
        return convert((1 << dt.bits) - 1, dt)
    big = {16: 65504.0, 32: 3.4028234663852886e38, 64: 1.7976931348623157e308}
    return convert(big[dt.bits] if dt.kind == "float" else 3.3895313892515355e38, dt)


def min_value(dtype: str | DataType) -> PrimExpr:
    """The smallest finite value of ``dtype``."""
    dt = DataType.parse(dtype)
    if dt.is_bool:
        return convert(False, dt)
    if dt.is_int:
        return convert(-(1 << (dt.bits - 1)), dt)
    if dt.is_uint:
        return convert(0, dt)
    top = max_value(dt)
    return convert(-top.value, dt)  # type: ignore[attr-defined]
