"""Unary element-wise operators: math, rounding, logic, ``clip`` and ``astype``.

Each keeps its operand's shape; float math takes float tensors only, ``logical_not`` bool
tensors, ``abs`` / ``negative`` / ``sign`` integer or float ones; ``isnan``, ``isinf`` and
``isfinite`` give ``bool``. Pattern: ``ELEMWISE``. The activation functions (``relu``,
``gelu``, ``gelu_tanh``, ``silu``) live in `relax.op.nn`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kiln import topi
from kiln.ir.dtype import DataType
from kiln.ir.op import Op
from kiln.relax.expr import Call, Expr
from kiln.relax.op.common import (
    BOOL,
    as_expr,
    attrs,
    check_arity,
    fail,
    plain,
    require_bool,
    require_float,
    require_numeric,
    tensor_sinfo,
)
from kiln.relax.op.registry import register_op
from kiln.relax.struct_info import StructInfo, TensorStructInfo
from kiln.tir import op as tir_op
from kiln.topi.elemwise import unary
from kiln.topi.tag import Pattern


def infer_unary(kind: str) -> Callable[[Call, Any], StructInfo]:
    """Struct info of a unary op: the operand's, with dtype rules by ``kind``
    (``"float"``, ``"numeric"``, ``"bool"``; ``"to_bool"`` / ``"numeric_to_bool"``: a bool
    result, of any / of a numeric operand)."""

    def infer(call: Call, ctx: Any) -> StructInfo:
        check_arity(call, 1)
        x = tensor_sinfo(call, 0, "the operand")
        if kind == "float":
            require_float(call, x)
        elif kind == "bool":
            require_bool(call, x, 0)
        elif kind.startswith("numeric"):
            require_numeric(call, x)
        if kind.endswith("to_bool"):
            return TensorStructInfo(x.shape, BOOL, x.ndim)
        return x

    return infer


def make_unary(
    name: str, fn: Callable[[Any], Any], kind: str, doc: str, family: str = "relax"
) -> Callable[[Expr], Call]:
    """Register the unary operator ``<family>.<name>`` computed by topi function ``fn``."""
    full = f"{family}.{name}"

    def builder(x: Expr) -> Call:
        return Call(Op.get(full), (as_expr(x),))

    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = doc
    register_op(
        full,
        infer=infer_unary(kind),
        legalize=lambda call, args: fn(args[0]),
        pattern=Pattern.ELEMWISE,
    )(builder)
    return builder


exp = make_unary("exp", topi.exp, "float", "``e ** x``.")
log = make_unary("log", topi.log, "float", "The natural logarithm.")
sqrt = make_unary("sqrt", topi.sqrt, "float", "The square root.")
rsqrt = make_unary("rsqrt", topi.rsqrt, "float", "``1 / sqrt(x)``.")
tanh = make_unary("tanh", topi.tanh, "float", "The hyperbolic tangent.")
sigmoid = make_unary("sigmoid", topi.sigmoid, "float", "``1 / (1 + exp(-x))``.")
erf = make_unary("erf", topi.erf, "float", "The error function.")
sin = make_unary("sin", topi.sin, "float", "The sine.")
cos = make_unary("cos", topi.cos, "float", "The cosine.")
floor = make_unary("floor", topi.floor, "float", "Rounding down.")
ceil = make_unary("ceil", topi.ceil, "float", "Rounding up.")
round = make_unary("round", topi.round, "float", "Rounding to nearest, halves to even.")  # noqa: A001
abs = make_unary("abs", topi.abs, "numeric", "The absolute value.")  # noqa: A001
negative = make_unary("negative", topi.negative, "numeric", "``-x``.")
logical_not = make_unary("logical_not", topi.logical_not, "bool", "``not x`` of a bool tensor.")
isnan = make_unary("isnan", topi.isnan, "to_bool", "Whether each element is NaN (bool).")
isfinite = make_unary(
    "isfinite", topi.isfinite, "numeric_to_bool", "Whether each element is neither inf nor NaN."
)


@register_op(
    "relax.sign",
    infer=infer_unary("numeric"),
    legalize=lambda call, args: topi.sign(args[0], call.attrs["nan_to_zero"]),
    pattern=Pattern.ELEMWISE,
)
def sign(x: Expr, nan_to_zero: bool = False) -> Call:
    """1, -1 or 0 by the sign of ``x`` (``-0.0`` gives 0); NaN gives NaN as in numpy and ONNX,
    or 0 with ``nan_to_zero`` as in PyTorch."""
    return Call(Op.get("relax.sign"), (as_expr(x),), attrs(nan_to_zero=bool(plain(nan_to_zero))))


def _legalize_isinf(call: Call, args: list[Any]) -> Any:
    return topi.isinf(args[0], call.attrs["detect_positive"], call.attrs["detect_negative"])


@register_op(
    "relax.isinf",
    infer=infer_unary("numeric_to_bool"),
    legalize=_legalize_isinf,
    pattern=Pattern.ELEMWISE,
)
def isinf(x: Expr, detect_positive: bool = True, detect_negative: bool = True) -> Call:
    """Whether each element is ``+inf`` (with ``detect_positive``) or ``-inf`` (with
    ``detect_negative``), as ONNX's ``IsInf`` (bool; False for integers)."""
    flags = attrs(
        detect_positive=bool(plain(detect_positive)), detect_negative=bool(plain(detect_negative))
    )
    return Call(Op.get("relax.isinf"), (as_expr(x),), flags)


def _libm(name: str) -> Callable[[Any], Any]:
    """The float compute of math builtin ``name`` over a tensor (`kiln.topi.elemwise.unary`)."""

    return lambda x: unary(name, x, lambda v: tir_op.math(name, v), None, floats=True)


tan = make_unary("tan", _libm("tan"), "float", "The tangent.")
asin = make_unary("asin", _libm("asin"), "float", "The inverse sine.")
acos = make_unary("acos", _libm("acos"), "float", "The inverse cosine.")
atan = make_unary("atan", _libm("atan"), "float", "The inverse tangent.")
sinh = make_unary("sinh", _libm("sinh"), "float", "The hyperbolic sine.")
cosh = make_unary("cosh", _libm("cosh"), "float", "The hyperbolic cosine.")
asinh = make_unary("asinh", _libm("asinh"), "float", "The inverse hyperbolic sine.")
acosh = make_unary("acosh", _libm("acosh"), "float", "The inverse hyperbolic cosine.")
atanh = make_unary("atanh", _libm("atanh"), "float", "The inverse hyperbolic tangent.")
log2 = make_unary("log2", _libm("log2"), "float", "The base-2 logarithm.")
log10 = make_unary("log10", _libm("log10"), "float", "The base-10 logarithm.")
log1p = make_unary("log1p", _libm("log1p"), "float", "``log(1 + x)``, exact for small ``x``.")
trunc = make_unary("trunc", _libm("trunc"), "float", "Rounding toward zero.")
expm1 = make_unary(
    "expm1",
    lambda x: unary("expm1", x, topi.math.expm1, None, floats=True),
    "float",
    "``e ** x - 1``, exact for small ``x`` (`kiln.topi.math.expm1`).",
)


def _infer_clip(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 1)
    return tensor_sinfo(call, 0, "the operand")


def _legalize_clip(call: Call, args: list[Any]) -> Any:
    return topi.clip(args[0], call.attrs["min"], call.attrs["max"])


@register_op("relax.clip", infer=_infer_clip, legalize=_legalize_clip, pattern=Pattern.ELEMWISE)
def clip(x: Expr, min: float, max: float) -> Call:  # noqa: A002
    """``x`` limited to ``[min, max]``."""
    return Call(Op.get("relax.clip"), (as_expr(x),), attrs(min=plain(min), max=plain(max)))


def _infer_astype(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 1)
    x = tensor_sinfo(call, 0, "the operand")
    return TensorStructInfo(x.shape, call.attrs["dtype"], x.ndim)


def _legalize_astype(call: Call, args: list[Any]) -> Any:
    return topi.cast(args[0], call.attrs["dtype"])


@register_op(
    "relax.astype", infer=_infer_astype, legalize=_legalize_astype, pattern=Pattern.ELEMWISE
)
def astype(x: Expr, dtype: str | DataType) -> Call:
    """``x`` converted to ``dtype``."""
    return Call(Op.get("relax.astype"), (as_expr(x),), attrs(dtype=str(DataType.parse(dtype))))


def _bitwise_not(x: Any) -> Any:

    return unary("bitwise_not", x, lambda v: ~v, None, floats=False)


def _infer_int_unary(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 1)
    x = tensor_sinfo(call, 0, "the operand")
    if not x.dtype.is_void and not x.dtype.is_integer:
        raise fail(call, f"needs an integer tensor, got dtype {x.dtype}")
    return x


@register_op(
    "relax.bitwise_not",
    infer=_infer_int_unary,
    legalize=lambda call, args: _bitwise_not(args[0]),
    pattern=Pattern.ELEMWISE,
)
def bitwise_not(x: Expr) -> Call:
    """``~x`` of an integer tensor."""
    return Call(Op.get("relax.bitwise_not"), (as_expr(x),))
