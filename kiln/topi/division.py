"""Truncating division and the two remainders, beside numpy's ``divide`` and ``floor_divide``
(`kiln.topi.elemwise`).

==================  =====================  ==================  ============================
operator            integers               floats              numpy / ONNX / PyTorch
==================  =====================  ==================  ============================
``trunc_divide``    C's ``/``              ``trunc(a / b)``    ONNX integer ``Div``; torch
                                                               ``div(rounding_mode="trunc")``
``floor_mod``       sign of the divisor    the same, exact     ``np.mod``; ONNX ``Mod``;
                                                               torch ``remainder``
``trunc_mod``       C's ``%``              C's ``fmod``        ``np.fmod``; ONNX ``Mod``
                                                               ``fmod=1``; torch ``fmod``
==================  =====================  ==================  ============================

Integer operands of one dtype, or float16/32/64 ones; they broadcast like any binary operator.
An integer divisor of 0 stops the kernel with a ``ValueError`` naming the division (the guard
`LowerIntrin` places before every integer division `kiln.arith` cannot prove safe); float
division by 0 gives IEEE ``inf`` / NaN. The float remainders are computed with ``fmod``, which
is exact (``a - floor(a / b) * b`` is not: ``a / b`` rounds), so their loops call libm and do
not vectorize.
"""

from __future__ import annotations

from typing import Any

from kiln.te import Tensor
from kiln.tir import op as tir_op
from kiln.tir.expr import EQ, LT, NE, And, Div, FloorMod, Let, Mod, PrimExpr, Select, Var, const
from kiln.topi.elemwise import binary

__all__ = ["floor_mod", "trunc_divide", "trunc_mod"]


def trunc_divide(a: Any, b: Any, name: str | None = None) -> Tensor:
    """``a / b`` rounded toward zero: C's integer division, ``trunc(a / b)`` for floats."""

    def f(x: PrimExpr, y: PrimExpr) -> PrimExpr:
        return tir_op.math("trunc", Div(x, y)) if x.dtype.is_float else Div(x, y)

    return binary("trunc_divide", a, b, f, name)


def trunc_mod(a: Any, b: Any, name: str | None = None) -> Tensor:
    """The remainder of `trunc_divide`, with the sign of ``a`` (``numpy.fmod``)."""
    return binary("trunc_mod", a, b, Mod, name)


def floor_mod(a: Any, b: Any, name: str | None = None) -> Tensor:
    """The remainder of floor division, with the sign of ``b`` (``numpy.mod``). For floats it
    is ``r = fmod(a, b)``, plus ``b`` where ``r`` is non-zero and its sign differs from
    ``b``'s; a zero remainder takes ``b``'s sign, as numpy's and onnxruntime's do."""

    def f(x: PrimExpr, y: PrimExpr) -> PrimExpr:
        if not x.dtype.is_float:
            return FloorMod(x, y)
        r = Var("r", x.dtype)
        zero = const(0.0, x.dtype)
        off = And(NE(r, zero), NE(LT(r, zero), LT(y, zero)))
        signed_zero = tir_op.math("copysign", zero, y)
        return Let(r, Mod(x, y), Select(off, r + y, Select(EQ(r, zero), signed_zero, r)))

    return binary("floor_mod", a, b, f, name)
