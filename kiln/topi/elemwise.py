"""Element-wise operators: broadcasting binary arithmetic and unary math.

Binary operators take two operands, tensors or Python numbers (at least one tensor), broadcast
with numpy's rules; tensors must share a dtype (cast one first). Unary math that C computes
through libm (``exp``, ``erf``, ``tanh``, ``sqrt``, ``log``, ``sigmoid``, ``gelu``) takes float16,
float32 or float64 tensors; ``relu``, ``clip``, ``negative``, ``abs`` also take integers.

Patterns: a unary operator, and a binary one whose operands already have the output's shape, is
``ELEMWISE``; a binary operator that stretches an operand is ``BROADCAST``; ``cast`` is
``ELEMWISE``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from kiln.errors import IRError, IRValueError
from kiln.ir.dtype import DataType
from kiln.te import Tensor, broadcast_shape, compute
from kiln.tir import op as tir_op
from kiln.tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    And,
    Cast,
    FloorDiv,
    IntImm,
    Max,
    Min,
    Not,
    Or,
    PrimExpr,
    Select,
    const,
    convert,
)
from kiln.topi import tag
from kiln.topi.math import erf as _erf
from kiln.topi.math import exp as _exp
from kiln.topi.math import gelu_erf as _gelu_erf
from kiln.topi.math import int_power as _int_power
from kiln.topi.math import tanh as _tanh
from kiln.topi.utils import (
    as_operand,
    check_float,
    check_numeric,
    check_tensor,
    fconst,
    same_shape,
)


# -- binary ---------------------------------------------------------------------------------
def _read(t: Any, idx: tuple[PrimExpr, ...]) -> Any:
    """``t`` at the broadcast index ``idx`` (size-1 dims read index 0; scalars pass through)."""
    if not isinstance(t, Tensor):
        return t
    own = idx[len(idx) - t.ndim :] if t.ndim else ()
    picks = tuple(
        convert(0, i.dtype) if isinstance(d, IntImm) and d.value == 1 else i
        for d, i in zip(t.shape, own)
    )
    return t[picks]


def _binary_dtype(op: str, a: Any, b: Any) -> DataType:
    tensors = [t for t in (a, b) if isinstance(t, Tensor)]
    if not tensors:
        raise IRError(f"{op}: needs at least one te.Tensor operand, got {a!r} and {b!r}")
    for t in tensors:
        check_numeric(op, t)
    if len(tensors) == 2 and tensors[0].dtype != tensors[1].dtype:
        raise IRError(
            f"{op}: tensor {a.name!r} has dtype {a.dtype} but tensor {b.name!r} has dtype "
            f"{b.dtype}; cast one of them first (topi.cast)"
        )
    return tensors[0].dtype


def binary(
    op: str,
    a: Any,
    b: Any,
    fcompute: Callable[[PrimExpr, PrimExpr], PrimExpr],
    name: str | None = None,
) -> Tensor:
    """``fcompute(a, b)`` over the broadcast of ``a`` and ``b``."""
    dtype = _binary_dtype(op, a, b)
    a, b = as_operand(op, a, dtype), as_operand(op, b, dtype)
    tensors = [t for t in (a, b) if isinstance(t, Tensor)]
    shape = broadcast_shape(*(t.shape for t in tensors), op=op, names=[t.name for t in tensors])
    elemwise = all(same_shape(t, shape) for t in tensors)
    kind = tag.ELEMWISE if elemwise else tag.BROADCAST
    return compute(
        shape,
        lambda *idx: fcompute(_read(a, tuple(idx)), _read(b, tuple(idx))),
        name=name or f"T_{op}",
        tag=kind,
        attrs=tag.attrs_for(kind),
    )


def add(a: Any, b: Any, name: str | None = None) -> Tensor:
    """``a + b`` with broadcasting."""
    return binary("add", a, b, lambda x, y: x + y, name)


def subtract(a: Any, b: Any, name: str | None = None) -> Tensor:
    """``a - b`` with broadcasting."""
    return binary("subtract", a, b, lambda x, y: x - y, name)


def multiply(a: Any, b: Any, name: str | None = None) -> Tensor:
    """``a * b`` with broadcasting."""
    return binary("multiply", a, b, lambda x, y: x * y, name)


def divide(a: Any, b: Any, name: str | None = None) -> Tensor:
    """``a / b`` with broadcasting (float tensors only: numpy's true division)."""
    dtype = _binary_dtype("divide", a, b)
    if not dtype.is_float:
        who = a if isinstance(a, Tensor) else b
        raise IRError(
            f"divide: tensor {who.name!r} has dtype {dtype}; divide is true division and needs "
            "float tensors (cast to float32 first)"
        )
    return binary("divide", a, b, lambda x, y: x / y, name)


def maximum(a: Any, b: Any, name: str | None = None) -> Tensor:
    """The element-wise maximum of ``a`` and ``b`` with broadcasting."""
    return binary("maximum", a, b, Max, name)


def minimum(a: Any, b: Any, name: str | None = None) -> Tensor:
    """The element-wise minimum of ``a`` and ``b`` with broadcasting."""
    return binary("minimum", a, b, Min, name)


def power(a: Any, b: Any, name: str | None = None) -> Tensor:
    """``a ** b`` with broadcasting: libm ``pow`` for floats, the exact wrapping integer power
    (`kiln.topi.math.int_power`) for integers."""

    def f(x: PrimExpr, y: PrimExpr) -> PrimExpr:
        return tir_op.math("pow", x, y) if x.dtype.is_float else _int_power(x, y)

    return binary("power", a, b, f, name)


# -- unary ----------------------------------------------------------------------------------
def unary(
    op: str, x: Any, fcompute: Callable[[PrimExpr], PrimExpr], name: str | None, floats: bool
) -> Tensor:
    """``fcompute`` applied to every element of ``x`` (an ``ELEMWISE`` compute)."""
    x = check_tensor(op, x)
    if floats:
        check_float(op, x)
    else:
        check_numeric(op, x)
    return compute(
        x.shape,
        lambda *idx: fcompute(x[idx]),
        name=name or f"T_{op}",
        tag=tag.ELEMWISE,
        attrs=tag.attrs_for(tag.ELEMWISE),
    )


def relu(x: Tensor, name: str | None = None) -> Tensor:
    """``max(x, 0)``."""
    return unary("relu", x, lambda v: Max(v, const(0, v.dtype)), name, floats=False)


def negative(x: Tensor, name: str | None = None) -> Tensor:
    """``-x``."""
    return unary("negative", x, lambda v: -v, name, floats=False)


def abs(x: Tensor, name: str | None = None) -> Tensor:  # noqa: A001
    """``|x|`` (``fabs`` for floats)."""

    def f(v: PrimExpr) -> PrimExpr:
        if v.dtype.is_float:
            return tir_op.math("fabs", v)
        if v.dtype.is_uint:
            return v
        return Select(v < const(0, v.dtype), const(0, v.dtype) - v, v)

    return unary("abs", x, f, name, floats=False)


def clip(x: Tensor, a_min: float, a_max: float, name: str | None = None) -> Tensor:
    """``x`` limited to ``[a_min, a_max]``."""
    x = check_tensor("clip", x)
    if not a_min <= a_max:
        raise IRValueError(
            f"clip: a_min {a_min!r} is greater than a_max {a_max!r} (tensor {x.name!r})"
        )
    lo, hi = as_operand("clip", a_min, x.dtype), as_operand("clip", a_max, x.dtype)
    return unary("clip", x, lambda v: Min(Max(v, lo), hi), name, floats=False)


def exp(x: Tensor, name: str | None = None) -> Tensor:
    """``e ** x`` (libm)."""
    return unary("exp", x, _exp, name, floats=True)


def erf(x: Tensor, name: str | None = None) -> Tensor:
    """The error function (libm)."""
    return unary("erf", x, _erf, name, floats=True)


def tanh(x: Tensor, name: str | None = None) -> Tensor:
    """The hyperbolic tangent (libm)."""
    return unary("tanh", x, _tanh, name, floats=True)


def sigmoid(x: Tensor, name: str | None = None) -> Tensor:
    """``1 / (1 + exp(-x))``."""
    return unary("sigmoid", x, lambda v: tir_op.math("sigmoid", v), name, floats=True)


def sqrt(x: Tensor, name: str | None = None) -> Tensor:
    """The square root (NaN below zero)."""
    return unary("sqrt", x, lambda v: tir_op.math("sqrt", v), name, floats=True)


def log(x: Tensor, name: str | None = None) -> Tensor:
    """The natural logarithm (``-inf`` at 0, NaN below)."""
    return unary("log", x, lambda v: tir_op.math("log", v), name, floats=True)


def gelu(x: Tensor, approximate: str = "none", name: str | None = None) -> Tensor:
    """GELU: ``x * Phi(x)`` with the erf form (``approximate="none"``) or the tanh
    approximation (``approximate="tanh"``), as in PyTorch. The float32 erf form is
    `kiln.topi.math.gelu_erf` (one fused rational, absolute error below 1e-6)."""
    if approximate not in ("none", "tanh"):
        raise IRValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")

    def f(v: PrimExpr) -> PrimExpr:
        half, one = fconst(0.5, v.dtype), fconst(1.0, v.dtype)
        if approximate == "none" and v.dtype.bits == 32:
            return _gelu_erf(v)
        if approximate == "none":
            return half * v * (one + _erf(v * fconst(1.0 / math.sqrt(2.0), v.dtype)))
        inner = v + fconst(0.044715, v.dtype) * v * v * v
        return half * v * (one + _tanh(fconst(math.sqrt(2.0 / math.pi), v.dtype) * inner))

    return unary("gelu", x, f, name, floats=True)


def cast(x: Tensor, dtype: str | DataType, name: str | None = None) -> Tensor:
    """``x`` converted to ``dtype`` (C conversion rules: floats truncate toward zero)."""
    x = check_tensor("cast", x)
    try:
        dt = DataType.parse(dtype)
    except IRError as e:
        raise IRError(f"cast: {e} (tensor {x.name!r})") from None
    if dt.lanes != 1 or dt.is_handle or dt.is_void:
        raise IRError(f"cast: cannot cast tensor {x.name!r} to {dt}; expected a scalar dtype")
    return compute(
        x.shape,
        lambda *idx: Cast(dt, x[idx]) if x.dtype != dt else x[idx],
        name=name or "T_cast",
        tag=tag.ELEMWISE,
        attrs=tag.attrs_for(tag.ELEMWISE),
    )


# -- more unary math, comparisons, logic and selection (used by the graph-level operators) -----
def rsqrt(x: Tensor, name: str | None = None) -> Tensor:
    """``1 / sqrt(x)``."""
    return unary("rsqrt", x, lambda v: fconst(1.0, v.dtype) / tir_op.math("sqrt", v), name, True)


def floor(x: Tensor, name: str | None = None) -> Tensor:
    """The largest integer not above ``x`` (float tensors)."""
    return unary("floor", x, lambda v: tir_op.math("floor", v), name, floats=True)


def ceil(x: Tensor, name: str | None = None) -> Tensor:
    """The smallest integer not below ``x`` (float tensors)."""
    return unary("ceil", x, lambda v: tir_op.math("ceil", v), name, floats=True)


def round(x: Tensor, name: str | None = None) -> Tensor:  # noqa: A001
    """``x`` rounded to the nearest integer, halves to even (numpy's ``round``)."""
    return unary("round", x, lambda v: tir_op.math("round", v), name, floats=True)


def sin(x: Tensor, name: str | None = None) -> Tensor:
    """The sine (libm)."""
    return unary("sin", x, lambda v: tir_op.math("sin", v), name, floats=True)


def cos(x: Tensor, name: str | None = None) -> Tensor:
    """The cosine (libm)."""
    return unary("cos", x, lambda v: tir_op.math("cos", v), name, floats=True)


def silu(x: Tensor, name: str | None = None) -> Tensor:
    """``x * sigmoid(x)``."""
    return unary("silu", x, lambda v: v * tir_op.math("sigmoid", v), name, floats=True)


def _to_bool(op: str, x: Tensor, f: Callable[[PrimExpr], PrimExpr], name: str | None) -> Tensor:
    """The bool tensor ``f(x)``: a test of each element of ``x``."""
    x = check_tensor(op, x)
    return compute(
        x.shape,
        lambda *i: f(x[i]),
        name=name or f"T_{op}",
        tag=tag.ELEMWISE,
        attrs=tag.attrs_for(tag.ELEMWISE),
    )


def isnan(x: Tensor, name: str | None = None) -> Tensor:
    """A bool tensor: whether each element is NaN (always False for integers)."""

    def f(v: PrimExpr) -> PrimExpr:
        return tir_op.math("isnan", v) if v.dtype.is_float else const(False, "bool")

    return _to_bool("isnan", x, f, name)


def sign(x: Tensor, nan_to_zero: bool = False, name: str | None = None) -> Tensor:
    """1 where ``x > 0``, -1 where ``x < 0``, 0 elsewhere (``-0.0`` gives ``+0.0``). NaN gives
    NaN (numpy, onnxruntime), or 0 with ``nan_to_zero`` (PyTorch)."""

    def f(v: PrimExpr) -> PrimExpr:
        one, zero = const(1, v.dtype), const(0, v.dtype)
        if v.dtype.is_uint:
            return Select(GT(v, zero), one, zero)
        rest = zero
        if v.dtype.is_float and not nan_to_zero:
            rest = Select(NE(v, v), v, zero)
        return Select(GT(v, zero), one, Select(LT(v, zero), const(-1, v.dtype), rest))

    return unary("sign", x, f, name, floats=False)


def isinf(
    x: Tensor, detect_positive: bool = True, detect_negative: bool = True, name: str | None = None
) -> Tensor:
    """A bool tensor: whether each element is ``+inf`` (``detect_positive``) or ``-inf``
    (``detect_negative``); always False for integers. Comparisons, not libm's ``isinf``, so
    the loop vectorizes."""

    def f(v: PrimExpr) -> PrimExpr:
        if not v.dtype.is_float or not (detect_positive or detect_negative):
            return const(False, "bool")
        if detect_positive and detect_negative:
            return EQ(tir_op.math("fabs", v), fconst(math.inf, v.dtype))
        return EQ(v, fconst(math.inf if detect_positive else -math.inf, v.dtype))

    check_numeric("isinf", check_tensor("isinf", x))
    return _to_bool("isinf", x, f, name)


def isfinite(x: Tensor, name: str | None = None) -> Tensor:
    """A bool tensor: whether each element is neither infinite nor NaN (``|x| < inf``, which
    NaN fails); always True for integers."""

    def f(v: PrimExpr) -> PrimExpr:
        if not v.dtype.is_float:
            return const(True, "bool")
        return LT(tir_op.math("fabs", v), fconst(math.inf, v.dtype))

    check_numeric("isfinite", check_tensor("isfinite", x))
    return _to_bool("isfinite", x, f, name)


def _bool_tensor(op: str, t: Any) -> None:
    if isinstance(t, Tensor) and not t.dtype.is_bool:
        raise IRError(f"{op}: tensor {t.name!r} has dtype {t.dtype}; expected a bool tensor")


def logical_not(x: Tensor, name: str | None = None) -> Tensor:
    """Element-wise ``not`` of a bool tensor."""
    x = check_tensor("logical_not", x)
    _bool_tensor("logical_not", x)
    return compute(
        x.shape,
        lambda *i: Not(x[i]),
        name=name or "T_logical_not",
        tag=tag.ELEMWISE,
        attrs=tag.attrs_for(tag.ELEMWISE),
    )


def _logical(op: str, a: Any, b: Any, fn: Callable[..., PrimExpr], name: str | None) -> Tensor:
    for t in (a, b):
        check_tensor(op, t)
        _bool_tensor(op, t)
    shape = broadcast_shape(a.shape, b.shape, op=op, names=[a.name, b.name])
    kind = tag.ELEMWISE if same_shape(a, shape) and same_shape(b, shape) else tag.BROADCAST
    return compute(
        shape,
        lambda *i: fn(_read(a, tuple(i)), _read(b, tuple(i))),
        name=name or f"T_{op}",
        tag=kind,
        attrs=tag.attrs_for(kind),
    )


def logical_and(a: Tensor, b: Tensor, name: str | None = None) -> Tensor:
    """Element-wise ``and`` of bool tensors, with broadcasting."""
    return _logical("logical_and", a, b, And, name)


def logical_or(a: Tensor, b: Tensor, name: str | None = None) -> Tensor:
    """Element-wise ``or`` of bool tensors, with broadcasting."""
    return _logical("logical_or", a, b, Or, name)


def logical_xor(a: Tensor, b: Tensor, name: str | None = None) -> Tensor:
    """Element-wise ``xor`` of bool tensors, with broadcasting."""
    return _logical("logical_xor", a, b, NE, name)


def floor_divide(a: Any, b: Any, name: str | None = None) -> Tensor:
    """numpy's ``floor_divide`` (and torch's ``div(rounding_mode="floor")``): integer floor
    division for integers; for floats `_float_floor_divide`."""

    def f(x: PrimExpr, y: PrimExpr) -> PrimExpr:
        return _float_floor_divide(x, y) if x.dtype.is_float else FloorDiv(x, y)

    return binary("floor_divide", a, b, f, name)


def _float_floor_divide(x: PrimExpr, y: PrimExpr) -> PrimExpr:
    """``floor(x / y)`` as numpy and torch compute it, from the exact remainder: ``(x -
    fmod(x, y)) / y``, one less where the remainder's sign differs from ``y``'s, rounded to the
    nearest integer (the division is exact but for rounding). So an infinite ``x`` gives NaN,
    a zero quotient keeps the sign of ``x / y``, and ``y = 0`` gives ``x / y``. NOTE: ``floor(x
    / y)`` differs where ``x / y`` rounds up to an integer and for infinite ``x``."""
    zero, one, half = (const(v, x.dtype) for v in (0.0, 1.0, 0.5))
    mod = tir_op.math("fmod", x, y)
    div = (x - mod) / y
    div = Select(NE(mod, zero) & NE(y < zero, mod < zero), div - one, div)
    whole = tir_op.math("floor", div)
    whole = Select(div - whole > half, whole + one, whole)
    signed = Select(NE(div, zero), whole, tir_op.math("copysign", zero, x / y))
    return Select(EQ(y, zero), x / y, signed)


def equal(a: Any, b: Any, name: str | None = None) -> Tensor:
    """``a == b`` as a bool tensor, with broadcasting."""
    return binary("equal", a, b, EQ, name)


def not_equal(a: Any, b: Any, name: str | None = None) -> Tensor:
    """``a != b`` as a bool tensor, with broadcasting."""
    return binary("not_equal", a, b, NE, name)


def less(a: Any, b: Any, name: str | None = None) -> Tensor:
    """``a < b`` as a bool tensor, with broadcasting."""
    return binary("less", a, b, LT, name)


def less_equal(a: Any, b: Any, name: str | None = None) -> Tensor:
    """``a <= b`` as a bool tensor, with broadcasting."""
    return binary("less_equal", a, b, LE, name)


def greater(a: Any, b: Any, name: str | None = None) -> Tensor:
    """``a > b`` as a bool tensor, with broadcasting."""
    return binary("greater", a, b, GT, name)


def greater_equal(a: Any, b: Any, name: str | None = None) -> Tensor:
    """``a >= b`` as a bool tensor, with broadcasting."""
    return binary("greater_equal", a, b, GE, name)


def where(cond: Tensor, a: Tensor, b: Tensor, name: str | None = None) -> Tensor:
    """``a`` where ``cond`` holds, else ``b`` (numpy ``where``, broadcasting all three)."""
    for t in (cond, a, b):
        check_tensor("where", t)
    _bool_tensor("where", cond)
    if a.dtype != b.dtype:
        raise IRError(
            f"where: tensor {a.name!r} has dtype {a.dtype} but tensor {b.name!r} has dtype "
            f"{b.dtype}; cast one of them first (topi.cast)"
        )
    shape = broadcast_shape(cond.shape, a.shape, b.shape, op="where")
    return compute(
        shape,
        lambda *i: Select(_read(cond, tuple(i)), _read(a, tuple(i)), _read(b, tuple(i))),
        name=name or "T_where",
        tag=tag.BROADCAST,
        attrs=tag.attrs_for(tag.BROADCAST),
    )
