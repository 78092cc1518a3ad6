"""Activation functions beyond ``relu`` / ``gelu`` / ``silu`` (`kiln.topi.elemwise`): the ones ONNX
and PyTorch name as operators (``Softplus``, ``Mish``, ``HardSwish``, ``Elu``...).

Each is one ``ELEMWISE`` compute over float16/32/64 tensors (``prelu``, any numeric dtype,
broadcasts its slope: ``BROADCAST`` when it stretches it). They are built from `kiln.topi.math`
pieces that vectorize (``exp``, ``log``, ``sigmoid``, selects, min/max) and are written to be
stable where the textbook form is not: ``softplus`` never exponentiates a positive number,
``mish`` never overflows, the ELU family uses an accurate ``expm1``. NaN in gives NaN out,
except in ``thresholded_relu`` and ``shrink``, whose comparisons send NaN to 0 (as
onnxruntime's do).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from kiln.errors import IRValueError
from kiln.te import Tensor
from kiln.tir import op as tir_op
from kiln.tir.expr import GT, LT, Max, Min, PrimExpr, Select, const
from kiln.topi.elemwise import binary, unary
from kiln.topi.math import exp, expm1, log1p_unit
from kiln.topi.utils import check_tensor, fconst

__all__ = [
    "celu",
    "elu",
    "hardsigmoid",
    "hardswish",
    "leaky_relu",
    "mish",
    "prelu",
    "selu",
    "shrink",
    "softplus",
    "softsign",
    "swish",
    "thresholded_relu",
]

Fn = Callable[[PrimExpr], PrimExpr]

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
"""SELU's constants (Klambauer et al. 2017), as PyTorch writes them; ONNX's defaults are these
rounded to float32."""


def _float_unary(op: str, x: Tensor, f: Fn, name: str | None) -> Tensor:
    return unary(op, x, f, name, floats=True)


def softplus(
    x: Tensor, beta: float = 1.0, threshold: float = 20.0, name: str | None = None
) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta * x > threshold``
    (PyTorch's; ``threshold=inf`` never switches, as ONNX's ``Softplus``). Computed as
    ``(max(z, 0) + log1p(exp(-|z|))) / beta`` with ``z = beta * x``: no overflow for large
    ``z``, full precision for very negative ``z``."""
    if beta == 0:
        raise IRValueError(f"softplus: beta must be non-zero, got {beta!r}")

    def f(v: PrimExpr) -> PrimExpr:
        z = v if beta == 1 else v * fconst(beta, v.dtype)
        absz = tir_op.math("fabs", z)
        out = Max(z, fconst(0.0, v.dtype)) + log1p_unit(exp(fconst(0.0, v.dtype) - absz))
        if beta != 1:
            out = out / fconst(beta, v.dtype)
        if math.isinf(threshold) and threshold > 0:
            return out
        return Select(GT(z, fconst(threshold, v.dtype)), v, out)

    return _float_unary("softplus", x, f, name)


def mish(x: Tensor, name: str | None = None) -> Tensor:
    """``x * tanh(softplus(x))``, as ``x * n / (n + 2)`` with ``n = e * (e + 2)``,
    ``e = exp(min(x, c))`` (``tanh(log(1 + e)) = ((1+e)**2 - 1) / ((1+e)**2 + 1)``): one
    exponential, exact for very negative ``x``; ``c`` (20, 5.5 for float16) is where the factor
    has rounded to 1 and ``e * e`` still fits the dtype."""

    def f(v: PrimExpr) -> PrimExpr:
        cap = fconst(5.5 if v.dtype.bits == 16 and v.dtype.is_float else 20.0, v.dtype)
        e = exp(Min(v, cap))
        n = e * (e + fconst(2.0, v.dtype))
        return v * (n / (n + fconst(2.0, v.dtype)))

    return _float_unary("mish", x, f, name)


def _hard_sigmoid(v: PrimExpr, alpha: float, beta: float) -> PrimExpr:
    lin = v * fconst(alpha, v.dtype) + fconst(beta, v.dtype)
    return Min(Max(lin, fconst(0.0, v.dtype)), fconst(1.0, v.dtype))


def hardsigmoid(
    x: Tensor, alpha: float = 0.2, beta: float = 0.5, name: str | None = None
) -> Tensor:
    """``min(max(alpha * x + beta, 0), 1)`` (ONNX's defaults; PyTorch's is ``alpha = 1/6``)."""
    return _float_unary("hardsigmoid", x, lambda v: _hard_sigmoid(v, alpha, beta), name)


def hardswish(x: Tensor, name: str | None = None) -> Tensor:
    """``x * min(max(x / 6 + 1/2, 0), 1)`` (ONNX's form of PyTorch's ``x * relu6(x + 3) / 6``)."""
    return _float_unary("hardswish", x, lambda v: v * _hard_sigmoid(v, 1.0 / 6.0, 0.5), name)


def softsign(x: Tensor, name: str | None = None) -> Tensor:
    """``x / (1 + |x|)``."""

    def f(v: PrimExpr) -> PrimExpr:
        return v / (fconst(1.0, v.dtype) + tir_op.math("fabs", v))

    return _float_unary("softsign", x, f, name)


def swish(x: Tensor, alpha: float = 1.0, name: str | None = None) -> Tensor:
    """``x * sigmoid(alpha * x)`` (``silu`` at ``alpha = 1``)."""

    def f(v: PrimExpr) -> PrimExpr:
        return v * tir_op.math("sigmoid", v * fconst(alpha, v.dtype))

    return _float_unary("swish", x, f, name)


def leaky_relu(x: Tensor, alpha: float = 0.01, name: str | None = None) -> Tensor:
    """``x`` where ``x >= 0``, ``alpha * x`` below."""

    def f(v: PrimExpr) -> PrimExpr:
        return Select(LT(v, fconst(0.0, v.dtype)), v * fconst(alpha, v.dtype), v)

    return _float_unary("leaky_relu", x, f, name)


def prelu(x: Tensor, slope: Tensor, name: str | None = None) -> Tensor:
    """``x`` where ``x >= 0``, ``slope * x`` below; ``slope`` broadcasts to ``x`` with numpy's
    rules (a per-channel slope of an NCHW tensor is ``[C, 1, 1]``). Any numeric dtype (ONNX's
    ``PRelu`` takes integers too)."""
    check_tensor("prelu", x)

    def f(v: PrimExpr, s: PrimExpr) -> PrimExpr:
        return Select(LT(v, const(0, v.dtype)), v * s, v)

    return binary("prelu", x, slope, f, name)


def _elu(v: PrimExpr, alpha: float, scale: float, input_scale: float) -> PrimExpr:
    """``scale * x`` where ``x > 0``, ``scale * alpha * expm1(input_scale * x)`` elsewhere (the
    argument capped at 0, so the unused branch cannot overflow)."""
    zero = fconst(0.0, v.dtype)
    arg = Min(v, zero) if input_scale == 1 else Min(v, zero) * fconst(input_scale, v.dtype)
    neg = fconst(alpha, v.dtype) * expm1(arg)
    out = Select(GT(v, zero), v, neg)
    return out if scale == 1 else out * fconst(scale, v.dtype)


def elu(x: Tensor, alpha: float = 1.0, name: str | None = None) -> Tensor:
    """``x`` where ``x > 0``, ``alpha * (exp(x) - 1)`` elsewhere."""
    return _float_unary("elu", x, lambda v: _elu(v, alpha, 1.0, 1.0), name)


def selu(
    x: Tensor, alpha: float = SELU_ALPHA, gamma: float = SELU_SCALE, name: str | None = None
) -> Tensor:
    """``gamma * elu(x, alpha)``."""
    return _float_unary("selu", x, lambda v: _elu(v, alpha, gamma, 1.0), name)


def celu(x: Tensor, alpha: float = 1.0, name: str | None = None) -> Tensor:
    """``x`` where ``x > 0``, ``alpha * (exp(x / alpha) - 1)`` elsewhere."""
    if alpha == 0:
        raise IRValueError(f"celu: alpha must be non-zero, got {alpha!r}")
    return _float_unary("celu", x, lambda v: _elu(v, alpha, 1.0, 1.0 / alpha), name)


def thresholded_relu(x: Tensor, alpha: float = 1.0, name: str | None = None) -> Tensor:
    """``x`` where ``x > alpha``, else 0."""

    def f(v: PrimExpr) -> PrimExpr:
        return Select(GT(v, fconst(alpha, v.dtype)), v, fconst(0.0, v.dtype))

    return _float_unary("thresholded_relu", x, f, name)


def shrink(x: Tensor, lambd: float = 0.5, bias: float = 0.0, name: str | None = None) -> Tensor:
    """``x + bias`` where ``x < -lambd``, ``x - bias`` where ``x > lambd``, else 0."""

    def f(v: PrimExpr) -> PrimExpr:
        b, zero = fconst(bias, v.dtype), fconst(0.0, v.dtype)
        inner = Select(GT(v, fconst(lambd, v.dtype)), v - b, zero)
        return Select(LT(v, fconst(-lambd, v.dtype)), v + b, inner)

    return _float_unary("shrink", x, f, name)
