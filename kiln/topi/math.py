"""Math building blocks shared by the operators, written as TIR expressions.

`exp`, `erf` and `tanh` are the math builtins: libm in scalar code, and in vectorized CPU loops
the vectorizable float32 arithmetic of `kiln.tir.math_approx` (`LowerIntrin` chooses).
`exp_nonpositive` is a cheaper exponential for arguments known to lie in ``[EXP_LO, 0]``
(softmax computes ``exp(x - max)``), made only of operations GCC vectorizes without fast-math
flags; it is `kiln.tir.math_approx.exp_nonpositive` (measured max error about 2 ulp).
`gelu_erf` is float32 GELU, erf form, as one fused rational (`kiln.tir.math_approx.gelu`; absolute
error below 1e-6), in every loop, vectorized or not.
"""

from __future__ import annotations

from kiln.tir import op as tir_op
from kiln.tir.expr import PrimExpr
from kiln.tir.math_approx import EXP_NONPOSITIVE_LO as EXP_LO
from kiln.tir.math_approx import exp_nonpositive
from kiln.tir.math_approx import gelu as gelu_erf

__all__ = ["EXP_LO", "erf", "exp", "exp_nonpositive", "gelu_erf", "tanh"]


def exp(x: PrimExpr) -> PrimExpr:
    """``e ** x`` (``expf`` for float32, computed in float for float16)."""
    return tir_op.math("exp", x)


def erf(x: PrimExpr) -> PrimExpr:
    """The error function."""
    return tir_op.math("erf", x)


def tanh(x: PrimExpr) -> PrimExpr:
    """The hyperbolic tangent."""
    return tir_op.math("tanh", x)
