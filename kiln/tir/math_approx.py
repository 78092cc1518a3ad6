"""float32 math functions written as TIR arithmetic that a C compiler vectorizes.

libm's ``expf``, ``logf``, ``tanhf``, ``erff`` are scalar calls: a loop that calls one is not
vectorized (GCC: "statement clobbers memory"), and glibc's vector variants (libmvec) are declared
only under ``-ffast-math``. `LowerIntrin` therefore writes these functions, inside vectorized
loops, as the expressions built here: polynomials, selects, integer shifts and bit casts
(``tir.reinterpret``, which C prints as a union, so the loop stays vectorizable). Scalar code
keeps calling libm.

NOTE: glibc's libmvec was measured as the alternative (glibc 2.36, GCC 12, AVX-512: declaring
``expf`` / ``erff`` with ``__attribute__((simd("notinbranch")))`` makes GCC call
``_ZGVeN16v_expf`` from an ``omp simd`` loop). Over 1M floats its ``exp`` took about as long as
this module's (~330 us), but a GELU loop on its ``erf`` took 730-920 us against ~400 us here,
and it needs GCC, x86-64 and glibc >= 2.35 (for ``erf``/``tanh``), where these expressions
compile with any C compiler and also work on the vector values of explicit-vector code.

Every builder takes a float32 expression (scalar or vector) and returns one of the same dtype;
values used more than once are bound with `Let`, so the argument is evaluated once. Special
values follow libm: NaN in gives NaN out, ``exp(-inf) = 0``, ``exp(inf) = inf``, ``log(0) = -inf``,
``log(x < 0) = NaN``, ``tanh(+-inf) = +-1``, ``erf(+-inf) = +-1``.

Accuracy: error against numpy's float64 result, in units of the last place (ulp) of the float32
result, measured on 2**20 random float32 arguments per function across its range plus the
special values (tests/tir/transform/test_lower_intrin.py checks 2**16 of them against these
bounds, with some margin):

- `exp`: 0.87 ulp over ``[-110, 90]`` (subnormal results included);
- `log`: 1.08 ulp over ``[1e-45, 1e38]`` (subnormal arguments included);
- `tanh`: 2.5 ulp;
- `erf`: 6.6 ulp, absolute error 3.9e-7 (a rational fit, evaluated in float32);
- `sigmoid`: 2.3 ulp where the result is above 1e-30 (below that ``1 + exp(-x)`` overflows in
  float32 and the result is 0, as with libm's ``expf``).

Two fused builders that topi calls directly (in every loop, vectorized or not), checked in
tests/tir/test_math_approx.py over dense samples, range ends and special values:

- `exp_nonpositive` (softmax's ``exp(x - max)``): 1.95 ulp over ``[-87.3, 0]`` (a degree-5
  polynomial: one FMA less than `exp`'s, for about 1 ulp more);
- `gelu` (float32 GELU, erf form): absolute error 9.4e-7 (at ``|x|`` near 5, where the
  result's own half ulp is 2.4e-7), exact beyond ``|x| > GELU_BIG``.

The coefficients were fitted for kiln: polynomials by least squares on the relative error with
iterative reweighting toward minimax (numpy, float64), the erf quotient by iterated linearized
least squares on its relative error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kiln.errors import IRError
from kiln.ir.dtype import DataType
from kiln.tir import op as tir_op
from kiln.tir.expr import (
    LT,
    And,
    Broadcast,
    Cast,
    FloatImm,
    IntImm,
    Let,
    PrimExpr,
    Select,
    Var,
)

LOG2E = 1.44269504088896341
LN2_HI = 0.693359375
"""ln 2 rounded to 9 significant bits: ``n * LN2_HI`` is exact for the ``|n| <= 150`` used here."""
LN2_LO = -2.12194440e-4
"""``ln 2 - LN2_HI`` (Cody and Waite's two-part reduction)."""
ROUND_MAGIC = 12582912.0
"""1.5 * 2**23: ``(v + ROUND_MAGIC) - ROUND_MAGIC`` rounds a float32 ``|v| < 2**22`` to an
integer (round to nearest even) with two additions."""

EXP_POLY = (
    0.0013817241415381432,
    0.008368708193302155,
    0.04166834056377411,
    0.1666652113199234,
    0.4999999403953552,
)
"""``exp(r) ~= 1 + r + r*r*P(r)`` on ``|r| <= ln2/2``, highest degree first; with the ``1 + r``
terms appended they form one degree-6 Horner polynomial (fit error 3e-9)."""

LOG_POLY = (
    0.08698966693110806,
    -0.1426590586632822,
    0.14914573220035907,
    -0.16577765334781588,
    0.1996309692816519,
    -0.2500133217924282,
    0.33333909951077145,
)
"""``log1p(f) ~= f - f*f/2 + f**3 * P(f)`` on ``[sqrt(1/2) - 1, sqrt(2) - 1]`` (relative fit
error 3e-8), highest degree first."""

TANH_BIG = 9.0
"""``tanh(9)`` rounds to 1.0f: larger ``|x|`` are clamped here."""

ERF_P = (
    1.9865415237041176e-06,
    0.0002845162693831108,
    0.0038824414406218276,
    0.05309888322703397,
    0.19352822090953037,
    1.1283791396000205,
)
ERF_Q = (
    3.741503761008645e-05,
    0.0011852967156373918,
    0.015205474477931732,
    0.11534246256466699,
    0.5048424825177739,
    1.0,
)
"""``erf(x) ~= x * P(x*x) / Q(x*x)`` on ``|x| <= ERF_BIG`` (relative fit error 2.5e-8), highest
degree first."""
SQRT_HALF = 0.70710678118654752440
ERF_BIG = 3.92
"""``erf(3.92)`` rounds to 1.0f: beyond it erf is ``+-1``."""

EXP5_POLY = (
    0.008290289901196957,
    0.04189806431531906,
    0.1666763722896576,
    0.4999914765357971,
    0.9999997019767761,
    1.0,
)
"""``exp(r) ~= P(r)`` on ``|r| <= ln2/2``, degree 5, highest degree first (relative fit error
9.4e-8): `exp_nonpositive`'s polynomial, one term shorter than `EXP_POLY`'s."""

GELU_P = tuple(0.5 * SQRT_HALF * c / 2.0**k for k, c in enumerate(reversed(ERF_P)))[::-1]
GELU_Q = tuple(c / 2.0**k for k, c in enumerate(reversed(ERF_Q)))[::-1]
"""`ERF_P` / `ERF_Q` rewritten for `gelu`: ``erf(x / sqrt(2)) / 2 ~= x * GELU_P(t) / GELU_Q(t)``
with ``t = x * x`` (the ``1/sqrt(2)`` and the ``1/2`` folded into the coefficients)."""
GELU_BIG = ERF_BIG / SQRT_HALF
"""Beyond ``|x| > GELU_BIG`` GELU is ``x`` (``x > 0``) or 0."""

EXP_NONPOSITIVE_LO = -87.3
"""The smallest argument `exp_nonpositive` takes: ``exp(-87.3)`` is still a normal float."""

F32 = DataType("float", 32)
I32 = DataType("int", 32)
U32 = DataType("uint", 32)
_EXP_LO, _EXP_HI = -104.0, 89.0
"""`exp` clamps its argument here: ``exp(-104)`` rounds to 0, ``exp(89)`` overflows to inf."""


def _const(value: float | int, like: PrimExpr, elem: DataType = F32) -> PrimExpr:
    """The constant ``value`` of type ``elem`` with the lanes of ``like``."""
    c = FloatImm(elem, float(value)) if elem.is_float else IntImm(elem, int(value))
    lanes = like.dtype.lanes
    return c if lanes == 1 else Broadcast(c, lanes)


Binder = Callable[[str, PrimExpr, Callable[[PrimExpr], PrimExpr]], PrimExpr]


def _bind(name: str, value: PrimExpr, body: Callable[[PrimExpr], PrimExpr]) -> PrimExpr:
    """``let name = value in body(name)`` (no binding for a variable or a constant)."""
    if isinstance(value, (Var, FloatImm, IntImm)):
        return body(value)
    v = Var(name, value.dtype)
    return Let(v, value, body(v))


def _horner(coeffs: Sequence[float], x: PrimExpr) -> PrimExpr:
    """``coeffs[0] * x**n + ... + coeffs[n]`` in Horner form."""
    acc = _const(coeffs[0], x)
    for c in coeffs[1:]:
        acc = acc * x + _const(c, x)
    return acc


def _as_int(x: PrimExpr) -> PrimExpr:
    return tir_op.reinterpret(I32.with_lanes(x.dtype.lanes), x)


def _as_float(i: PrimExpr) -> PrimExpr:
    return tir_op.reinterpret(F32.with_lanes(i.dtype.lanes), i)


def _shl(a: PrimExpr, bits: int) -> PrimExpr:
    return tir_op.call_intrin(a.dtype, "shift_left", a, _const(bits, a, I32))


def _shr(a: PrimExpr, bits: int) -> PrimExpr:
    return tir_op.call_intrin(a.dtype, "shift_right", a, _const(bits, a, I32))


def _scale_pow2(v: PrimExpr, n: PrimExpr) -> PrimExpr:
    """``v * 2.0 ** n`` for an int32 ``n`` in ``[-252, 254]``: two multiplications by normal
    powers of two built from exponent bits (``2**128`` alone is not a float; a result in the
    subnormal range is rounded once, by the second)."""

    def build(h: PrimExpr) -> PrimExpr:
        bias = _const(127, n, I32)
        return (v * _as_float(_shl(h + bias, 23))) * _as_float(_shl(n - h + bias, 23))

    return _bind("exp_h", _shr(n, 1), build)


def _check(name: str, x: PrimExpr) -> None:
    if x.dtype.element_of() != F32:
        raise IRError(f"math_approx.{name}: expected a float32 expression, got {x.dtype}")


def _inline(name: str, value: PrimExpr, body: Callable[[PrimExpr], PrimExpr]) -> PrimExpr:
    """`_bind` without the binding: ``body(value)`` (for expressions TE computes use)."""
    return body(value)


def _exp_reduced(
    xc: PrimExpr, scale: Callable[[PrimExpr, PrimExpr], PrimExpr], bind: Binder
) -> PrimExpr:
    """``exp(xc)`` as ``scale(exp(r), t)``: ``t = xc * log2(e) + ROUND_MAGIC`` holds
    ``n = round(xc * log2(e))`` in its low mantissa bits, ``r = xc - n ln2`` is in
    ``[-ln2/2, ln2/2]`` and ``exp(r)`` a polynomial; ``scale`` multiplies by ``2**n``."""
    magic = _const(ROUND_MAGIC, xc)

    def reduced(t: PrimExpr) -> PrimExpr:
        n = t - magic
        r = xc - n * _const(LN2_HI, xc) - n * _const(LN2_LO, xc)
        poly = bind("exp_r", r, lambda rv: _horner((*EXP_POLY, 1.0, 1.0), rv))
        return scale(poly, t)

    return bind("exp_t", xc * _const(LOG2E, xc) + magic, reduced)


def exp(x: PrimExpr) -> PrimExpr:
    """``e ** x`` (see `_exp_reduced`), the argument clamped to ``[-104, 89]`` first (NaN passes
    through; the clamped ends round to 0 and overflow to inf)."""
    _check("exp", x)
    lo, hi = _const(_EXP_LO, x), _const(_EXP_HI, x)

    def scale(poly: PrimExpr, t: PrimExpr) -> PrimExpr:
        n = _as_int(t) - _as_int(_const(ROUND_MAGIC, x))
        return _bind("exp_n", n, lambda nv: _scale_pow2(poly, nv))

    def clamp(v: PrimExpr) -> PrimExpr:
        return Select(LT(v, lo), lo, Select(LT(hi, v), hi, v))

    def clamped(v: PrimExpr) -> PrimExpr:
        return _bind("exp_xc", clamp(v), lambda c: _exp_reduced(c, scale, _bind))

    return _bind("exp_x", x, clamped)


def exp_nonpositive(x: PrimExpr) -> PrimExpr:
    """``e ** x`` for a float32 ``x`` known to lie in ``[EXP_NONPOSITIVE_LO, 0]`` (softmax's
    ``x - max``, clamped by the caller): no special cases, the degree-5 `EXP5_POLY`, and ``2**n``
    applied by adding ``n << 23`` to the polynomial's exponent bits, which is exact because the
    result stays a normal float (``n >= -126``, and ``exp(r) >= 1`` when ``n = -126``).
    ``bits(t) << 23`` is ``n << 23`` (the magic's own bits shift out); the shift and the add
    are done in uint32, where wrapping is defined (in int32 they overflow, which UBSan reports).
    NOTE: it binds nothing with `Let` (TE computes use it; the C compiler merges the repeated
    subexpressions)."""
    _check("exp_nonpositive", x)
    magic = _const(ROUND_MAGIC, x)
    u32 = U32.with_lanes(x.dtype.lanes)
    t = x * _const(LOG2E, x) + magic
    n = t - magic
    r = x - n * _const(LN2_HI, x) - n * _const(LN2_LO, x)
    poly = _horner(EXP5_POLY, r)
    shifted = _shl(tir_op.reinterpret(u32, t), 23)
    return _as_float(tir_op.reinterpret(u32, poly) + shifted)


def gelu(x: PrimExpr) -> PrimExpr:
    """GELU, erf form: ``x * Phi(x) = x/2 + x * erf(x / sqrt(2)) / 2``, computed as
    ``x * D + x/2`` with ``D = x * GELU_P(t) / GELU_Q(t)``, ``t = x*x`` (one rational, no
    separate ``x / sqrt(2)``, ``1 + erf`` or ``* 0.5`` steps). Where ``t > GELU_BIG**2``,
    ``D = copysign(1/2, x)`` exactly (one comparison, on ``t``; the sign from ``x``'s bits), so
    the result is ``x`` or 0. NaN gives NaN, ``inf`` gives ``inf`` and ``-inf`` gives NaN
    (``-inf * 0``, as the unfused formula). NOTE: binds nothing with `Let` (TE computes use
    it)."""
    _check("gelu", x)
    t = x * x
    d = x * _horner(GELU_P, t) / _horner(GELU_Q, t)
    bits = _as_int(x)
    sign = tir_op.call_intrin(bits.dtype, "bitwise_and", bits, _const(-0x80000000, x, I32))
    half_bits = _const(0x3F000000, x, I32)
    signed_half = _as_float(tir_op.call_intrin(sign.dtype, "bitwise_or", sign, half_bits))
    d = Select(LT(_const(GELU_BIG * GELU_BIG, x), t), signed_half, d)
    return x * d + x * _const(0.5, x)


def log(x: PrimExpr) -> PrimExpr:
    """The natural logarithm: ``x = m * 2**e`` with ``m`` in ``[sqrt(1/2), sqrt(2))`` read from
    the bits, ``log(m) = log1p(m - 1)`` a polynomial. Subnormal ``x`` is scaled by ``2**23``."""
    _check("log", x)
    tiny = _const(1.1754943508222875e-38, x)
    sqrt_half_bits = _const(0x3F3504F3, x, I32)

    def from_bits(v: PrimExpr, scaled: PrimExpr, small: PrimExpr) -> PrimExpr:
        offset = _as_int(scaled) - sqrt_half_bits
        e = _shr(offset, 23) - Select(small, _const(23, x, I32), _const(0, x, I32))
        m_bits = tir_op.call_intrin(offset.dtype, "bitwise_and", offset, _const(0x7FFFFF, x, I32))
        f = _as_float(m_bits + sqrt_half_bits) - _const(1.0, x)
        return _bind("log_f", f, lambda fv: combine(v, fv, Cast(x.dtype, e)))

    def combine(v: PrimExpr, f: PrimExpr, e: PrimExpr) -> PrimExpr:
        ff = f * f
        log1p = f + ff * (f * _horner(LOG_POLY, f) - _const(0.5, x))
        r = (e * _const(LN2_LO, x) + log1p) + e * _const(LN2_HI, x)
        special = Select(
            v.eq(_const(0.0, x)),
            _const(float("-inf"), x),
            Select(LT(v, _const(0.0, x)), _const(float("nan"), x), v),
        )
        ok = And(LT(_const(0.0, x), v), LT(v, _const(float("inf"), x)))
        return Select(ok, r, special)

    def body(v: PrimExpr) -> PrimExpr:
        small = LT(v, tiny)
        scaled = Select(small, v * _const(8388608.0, x), v)
        return _bind("log_s", scaled, lambda s: from_bits(v, s, small))

    return _bind("log_x", x, body)


def _expm1_nonpositive(y: PrimExpr) -> PrimExpr:
    """``e ** y - 1`` for ``y`` in ``[-87.3, 0]``: ``2**n * (exp(r) - 1) + (2**n - 1)``, with
    ``exp(r) - 1 = r + r*r*P(r)`` kept without its leading 1, so nothing cancels for small ``y``
    (``n = 0``)."""
    magic = _const(ROUND_MAGIC, y)

    def reduced(t: PrimExpr) -> PrimExpr:
        n = t - magic
        r = y - n * _const(LN2_HI, y) - n * _const(LN2_LO, y)
        em1 = _bind("em1_r", r, lambda rv: rv + rv * rv * _horner(EXP_POLY, rv))
        scale = _as_float(_shl(_as_int(t) + _const(127, y, I32), 23))
        return _bind("em1_s", scale, lambda sv: sv * em1 + (sv - _const(1.0, y)))

    return _bind("em1_t", y * _const(LOG2E, y) + magic, reduced)


def tanh(x: PrimExpr) -> PrimExpr:
    """The hyperbolic tangent: ``u = expm1(-2|x|)``, ``tanh(|x|) = -u / (u + 2)`` (no
    cancellation near 0), the sign of ``x`` put back; ``|x|`` is clamped at 9 (``tanh(9)``
    rounds to 1)."""
    _check("tanh", x)
    zero, two = _const(0.0, x), _const(2.0, x)

    def body(v: PrimExpr, ax: PrimExpr) -> PrimExpr:
        clamped = Select(LT(_const(TANH_BIG, x), ax), _const(TANH_BIG, x), ax)
        u = _expm1_nonpositive(zero - two * clamped)
        t = _bind("tanh_u", u, lambda uv: (zero - uv) / (uv + two))
        return _bind("tanh_t", t, lambda tv: Select(LT(v, zero), zero - tv, tv))

    def absolute(v: PrimExpr) -> PrimExpr:
        return _bind("tanh_a", Select(LT(v, zero), zero - v, v), lambda a: body(v, a))

    return _bind("tanh_x", x, absolute)


def erf(x: PrimExpr) -> PrimExpr:
    """The error function: ``x * P(x*x) / Q(x*x)`` for ``|x| <= 3.92``, else ``+-1``."""
    _check("erf", x)
    big, one = _const(ERF_BIG, x), _const(1.0, x)

    def body(v: PrimExpr) -> PrimExpr:
        t = v * v
        ratio = _bind("erf_t", t, lambda tv: v * _horner(ERF_P, tv) / _horner(ERF_Q, tv))
        return Select(LT(big, v), one, Select(LT(v, _const(-ERF_BIG, x)), _const(-1.0, x), ratio))

    return _bind("erf_x", x, body)


def sigmoid(x: PrimExpr) -> PrimExpr:
    """``1 / (1 + exp(-x))``."""
    _check("sigmoid", x)
    one = _const(1.0, x)
    return one / (one + exp(_const(0.0, x) - x))


APPROXIMATIONS: dict[str, Callable[[PrimExpr], PrimExpr]] = {
    "exp": exp,
    "log": log,
    "tanh": tanh,
    "erf": erf,
    "sigmoid": sigmoid,
}
"""The math builtins (by `kiln.tir.builtin.MATH_OPS` name) written here for float32."""
