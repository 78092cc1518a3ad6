"""Math building blocks shared by the operators, written as TIR expressions.

`exp`, `erf` and `tanh` are the math builtins: libm in scalar code, and in vectorized CPU loops
the vectorizable float32 arithmetic of `kiln.tir.math_approx` (`LowerIntrin` chooses).
`exp_nonpositive` is a cheaper exponential for arguments known to lie in ``[EXP_LO, 0]``
(softmax computes ``exp(x - max)``), made only of operations GCC vectorizes without fast-math
flags; it is `kiln.tir.math_approx.exp_nonpositive` (measured max error about 2 ulp).
`gelu_erf` is float32 GELU, erf form, as one fused rational (`kiln.tir.math_approx.gelu`; absolute
error below 1e-6), in every loop, vectorized or not.
`log1p_unit` and `expm1` are ``log(1 + u)`` and ``e**x - 1`` accurate where the direct forms
cancel, written with `exp` and `log` only (libm's ``log1pf`` / ``expm1f`` would keep a loop from
vectorizing; ``exp`` and ``log`` have vectorizable forms).
`int_power` is the exact integer ``x ** e`` (wrapping like numpy's), by repeated squaring.
"""

from __future__ import annotations

from kiln.ir.dtype import DataType
from kiln.tir import op as tir_op
from kiln.tir.expr import EQ, LT, NE, Cast, Let, PrimExpr, Select, Var, const
from kiln.tir.math_approx import EXP_NONPOSITIVE_LO as EXP_LO
from kiln.tir.math_approx import exp_nonpositive
from kiln.tir.math_approx import gelu as gelu_erf

__all__ = [
    "EXP_LO",
    "erf",
    "exp",
    "exp_nonpositive",
    "expm1",
    "gelu_erf",
    "int_power",
    "log1p_unit",
    "tanh",
]


def exp(x: PrimExpr) -> PrimExpr:
    """``e ** x`` (``expf`` for float32, computed in float for float16)."""
    return tir_op.math("exp", x)


def erf(x: PrimExpr) -> PrimExpr:
    """The error function."""
    return tir_op.math("erf", x)


def tanh(x: PrimExpr) -> PrimExpr:
    """The hyperbolic tangent."""
    return tir_op.math("tanh", x)


def log(x: PrimExpr) -> PrimExpr:
    """The natural logarithm."""
    return tir_op.math("log", x)


def log1p_unit(u: PrimExpr) -> PrimExpr:
    """``log(1 + u)`` for ``u`` in ``[0, 1]``: ``w = 1 + u`` is rounded by exactly
    ``c = (w - 1) - u`` (``1 >= u``), and ``log(1 + u) = log(w - c) ~= log(w) - c / w``; where
    ``w`` rounds to 1 this is ``u``. NaN gives NaN."""
    one = const(1.0, u.dtype)
    w = one + u
    return log(w) - ((w - one) - u) / w


def expm1(x: PrimExpr) -> PrimExpr:
    """``e**x - 1``: for ``|x| < 1/2``, ``(u - 1) * x / log(u)`` with ``u = exp(x)`` (the
    rounding of ``u`` cancels between numerator and denominator; ``x`` itself where ``u``
    rounds to 1), else ``u - 1``, which does not cancel there. NaN gives NaN, ``-inf`` gives -1."""
    one, half = const(1.0, x.dtype), const(0.5, x.dtype)
    u = exp(x)
    near = Select(EQ(u, one), x, (u - one) * x / log(u))
    small = LT(tir_op.math("fabs", x), half)
    return Select(small, near, u - one)


def int_power(x: PrimExpr, e: PrimExpr) -> PrimExpr:
    """``x ** e`` of integers of one dtype, exact modulo ``2**bits`` (numpy's and PyTorch's
    wrap-around): square-and-multiply over every bit ``e`` can hold, in the unsigned type of
    the same width (C defines its wrap-around; signed overflow is undefined), each step a
    ``let``. A negative ``e`` gives ``trunc(1 / x**-e)``: 1 for ``x = 1``, +-1 for ``x = -1``,
    0 otherwise (0 for ``x = 0`` too, where onnxruntime's ``std::pow`` cast is undefined)."""
    dt = x.dtype
    u = DataType("uint", dt.bits, dt.lanes)
    steps = dt.bits if dt.is_uint else dt.bits - 1  # NOTE: the bits a non-negative e can set
    lets: list[tuple[Var, PrimExpr]] = [(Var("m", u), Cast(u, e))]
    lets.append((Var("b0", u), Cast(u, x)))
    m, b, r = lets[0][0], lets[1][0], const(1, u)
    for k in range(steps):
        bit = NE((m >> const(k, u)) & const(1, u), const(0, u))
        lets.append((Var(f"r{k}", u), Select(bit, r * b, r)))
        r = lets[-1][0]
        if k + 1 < steps:
            lets.append((Var(f"b{k + 1}", u), b * b))
            b = lets[-1][0]
    out: PrimExpr = Cast(dt, r)
    for var, value in reversed(lets):
        out = Let(var, value, out)
    if dt.is_uint:
        return out
    one, zero = const(1, dt), const(0, dt)
    odd = NE(e & one, zero)
    minus_one = Select(odd, const(-1, dt), one)
    inverse = Select(EQ(x, one), one, Select(EQ(x, const(-1, dt)), minus_one, zero))
    return Select(LT(e, zero), inverse, out)
