"""SimplifyInference: inference-only operators as the element-wise operators they compute.

In every graph function that is not primitive, external or a ``Compiler`` function, the
normalized output ``y = batch_norm(x, gamma, beta, mean, var)[0]`` whose four parameters are
`Constant` s becomes ``x * s + t`` with the per-channel constants ``s = gamma / sqrt(var +
eps)`` and ``t = beta - mean * s`` (computed in float64, stored in ``x``'s dtype), shaped to
broadcast along the call's axis. The ``batch_norm`` binding goes when nothing else reads it
(its other fields are the statistics, passed through). One rewrite rule
(`kiln.relax.pattern`): the ``[0]`` and its ``batch_norm`` are bindings of one block.

NOTE: ``batch_norm`` has no channel-blocked form, so `AlterOpLayout` converted the data to NCHW
and back around every one; a multiply and an add stay blocked and join the epilogue of the
convolution before them (`make demo`'s CNN, from ONNX or torch alike: 72 of 233 us were those
conversions).

Postcondition: every function computes what it did, up to float rounding of ``s`` and ``t``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.transform import PassContext
from kiln.relax import op as R
from kiln.relax.analysis.primitive import is_lowerable
from kiln.relax.expr import Call, Constant, Expr, Function, const
from kiln.relax.function_pass import FunctionPass
from kiln.relax.pattern import Match, P, is_const, is_op, is_tuple_get, rewrite, rule
from kiln.relax.struct_info import TensorStructInfo

STATISTICS = ("gamma", "beta", "mean", "var")


def _has_channels(x: Any) -> bool:
    return isinstance(x.struct_info_, TensorStructInfo) and x.struct_info_.ndim >= 1


BATCH_NORM = is_op("relax.nn.batch_norm")(
    P.x.where(_has_channels), *(is_const().named(k) for k in STATISTICS)
).named("bn")


def _affine(call: Call, stats: list[Constant]) -> tuple[Constant, Constant]:
    """``(s, t)`` with ``x * s + t`` the normalized output of the ``batch_norm`` ``call`` of
    constant ``stats`` (gamma, beta, mean, var), shaped to broadcast along its axis."""
    x = call.args[0]
    gamma, beta, mean, var = (c.data.astype("float64") for c in stats)
    a = call.attrs
    g = gamma if a["scale"] else 1.0
    b = beta if a["center"] else 0.0
    s = g / np.sqrt(var + a["epsilon"])
    t = b - mean * s
    sinfo = x.struct_info_
    assert isinstance(sinfo, TensorStructInfo)
    shape = [1] * sinfo.ndim
    shape[a["axis"] % sinfo.ndim] = -1
    dtype = str(sinfo.dtype)
    scale = const(np.asarray(s).reshape(shape).astype(dtype))
    return scale, const(np.asarray(t).reshape(shape).astype(dtype))


@rule(is_tuple_get(BATCH_NORM, 0))
def batch_norm_as_affine(m: Match) -> Expr | None:
    scale, shift = _affine(m.value("bn"), [m.value(k) for k in STATISTICS])
    return R.add(R.multiply(m.x, scale), shift)


@dataclass(frozen=True)
class SimplifyInference(FunctionPass):
    """Constant-statistics ``batch_norm`` outputs as ``x * s + t`` (see the module docstring)."""

    name: ClassVar[str] = "simplify-inference"

    def transform(self, gv: GlobalVar, func: Function, mod: IRModule, ctx: PassContext) -> BaseFunc:
        return rewrite(func, [batch_norm_as_affine], mod) if is_lowerable(func) else func


__all__ = ["SimplifyInference"]
