"""Math building blocks shared by the operators, written as TIR expressions.

`exp_nonpositive` is an exponential for arguments known to lie in ``[lo, 0]`` (softmax computes
``exp(x - max)``) made only of operations GCC vectorizes without fast-math flags: a degree-6
polynomial on ``[-ln2/2, ln2/2]`` (`EXP_POLY`; measured max relative error of the whole function
about 1.25 ulp over ``[-87.3, 0]``) and a power of two built from integer
shifts and int-to-float conversions (`pow2_neg_scaled`). libm's ``expf`` is a scalar call, which
would keep every softmax loop scalar (glibc offers vector variants only under ``-ffast-math``).

NOTE: the natural way to build ``2**n`` is to write ``n + 127`` into the exponent bits with a
bit cast (``tir.reinterpret``). The C backend emits that cast through ``memcpy`` on a stack
temporary, which stops GCC 12 from vectorizing the surrounding loop (measured: softmax 128x1024
takes 8x longer), so `pow2_neg_scaled` uses shifts and conversions instead. If the backend
switches to a union-based cast, `pow2_neg_scaled` can become one shift and one reinterpret.
"""

from __future__ import annotations

from kiln.ir.dtype import DataType
from kiln.tir import op as tir_op
from kiln.tir.expr import Cast, PrimExpr, const

F32 = DataType("float", 32)
I32 = DataType("int", 32)

LOG2E = 1.44269504088896341
LN2_HI = 0.693359375
LN2_LO = -2.12194440e-4
EXP_POLY = (
    0.0013817241415381432,
    0.008368708193302155,
    0.04166834056377411,
    0.1666652113199234,
    0.4999999403953552,
)
"""Coefficients of ``exp(r) ~= 1 + r + r*r*P(r)`` on ``|r| <= ln2/2``, highest degree first;
with the ``1 + r`` terms appended they form one degree-6 Horner polynomial. Fitted for kiln by
least squares on the relative error with iterative reweighting toward minimax (fit error 3e-9);
evaluated in float32 the polynomial is within 1.4 ulp of ``exp``."""

EXP_LO = -87.3
"""The smallest argument `exp_nonpositive` takes: ``exp(-87.3)`` is still a normal float."""


def _f(v: float) -> PrimExpr:
    return const(v, F32)


def _i(v: int) -> PrimExpr:
    return const(v, I32)


def _shl(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return tir_op.call_intrin(I32, "shift_left", a, b)


def pow2_neg_scaled(m: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
    """Two float32 factors whose product is ``2 ** (127 - m)`` for an int32 ``m`` in
    ``[0, 127]``; multiply by ``2**-127`` (folded into the caller's polynomial) to get ``2**-m``.

    ``m = 16 a + b``: ``2**(15 - b)`` is ``1 << (15 - b)`` converted, and ``2**(112 - 16 a)`` is
    ``(1 << (28 - 4 a))`` converted and squared twice; every step is exact.
    """
    b = tir_op.call_intrin(I32, "bitwise_and", m, _i(15))
    a4 = tir_op.call_intrin(
        I32, "bitwise_and", tir_op.call_intrin(I32, "shift_right", m, _i(2)), _i(-4)
    )
    low = Cast(F32, _shl(_i(1), _i(15) - b))
    high = Cast(F32, _shl(_i(1), _i(28) - a4))
    high = high * high
    return high * high, low


def exp_nonpositive(v: PrimExpr) -> PrimExpr:
    """``exp(v)`` for a float32 ``v`` in ``[EXP_LO, 0]`` (callers clamp; see module docstring).

    ``m = round(-v * log2(e))`` is in ``[0, 126]``; ``r = v + m ln2`` lies in ``[-ln2/2, ln2/2]``
    and ``exp(v) = exp(r) * 2**-m``. The polynomial is evaluated in Horner form with its
    coefficients pre-scaled by ``2**-112`` (still normal floats), which with the two factors of
    `pow2_neg_scaled` and a last ``2**-15`` gives ``exp(r) * 2**-m`` without a bit cast.
    """
    m = Cast(I32, _f(0.5) - v * _f(LOG2E))
    mf = Cast(F32, m)
    r = v + mf * _f(LN2_HI) + mf * _f(LN2_LO)
    scale = 2.0**-112
    p = _f(EXP_POLY[0] * scale)
    for c in (*EXP_POLY[1:], 1.0, 1.0):
        p = p * r + _f(c * scale)
    high, low = pow2_neg_scaled(m)
    return p * high * low * _f(2.0**-15)


def exp(x: PrimExpr) -> PrimExpr:
    """libm's ``exp`` (``expf`` for float32, computed in float for float16)."""
    return tir_op.math("exp", x)


def erf(x: PrimExpr) -> PrimExpr:
    """libm's ``erf``."""
    return tir_op.math("erf", x)


def tanh(x: PrimExpr) -> PrimExpr:
    """libm's ``tanh``."""
    return tir_op.math("tanh", x)
