"""SimplifyInference: inference-only operators as the element-wise operators they compute.

In every graph function that is not primitive, external or a ``Compiler`` function, the
normalized output ``y = batch_norm(x, gamma, beta, mean, var)[0]`` whose four parameters are
`Constant` s becomes ``x * s + t`` with the per-channel constants ``s = gamma / sqrt(var +
eps)`` and ``t = beta - mean * s`` (computed in float64, stored in ``x``'s dtype), shaped to
broadcast along the call's axis. The ``batch_norm`` binding goes when nothing else reads it
(its other fields are the statistics, passed through).

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
from kiln.ir.visitor import pre_order_nodes
from kiln.relax import op as R
from kiln.relax.analysis.free_vars import use_counts
from kiln.relax.analysis.primitive import is_lowerable
from kiln.relax.binding import Binding, VarBinding
from kiln.relax.expr import Call, Constant, Function, TupleGetItem, const
from kiln.relax.expr_functor import ExprMutator
from kiln.relax.function_pass import FunctionPass
from kiln.relax.struct_info import TensorStructInfo

BATCH_NORM = "relax.nn.batch_norm"


def _constant_batch_norm(value: Any) -> bool:
    return (
        isinstance(value, Call)
        and getattr(value.op, "name", None) == BATCH_NORM
        and all(isinstance(a, Constant) for a in value.args[1:])
        and isinstance(value.args[0].struct_info_, TensorStructInfo)
        and value.args[0].struct_info_.ndim >= 1
    )


def _affine(call: Call) -> tuple[Constant, Constant]:
    """``(s, t)`` with ``x * s + t`` the normalized output of the constant ``batch_norm``
    ``call``, shaped to broadcast along its axis."""
    x, gamma, beta, mean, var = call.args
    a = call.attrs
    g = gamma.data.astype("float64") if a["scale"] else 1.0  # type: ignore[attr-defined]
    b = beta.data.astype("float64") if a["center"] else 0.0  # type: ignore[attr-defined]
    s = g / np.sqrt(var.data.astype("float64") + a["epsilon"])  # type: ignore[attr-defined]
    t = b - mean.data.astype("float64") * s  # type: ignore[attr-defined]
    sinfo = x.struct_info_
    assert isinstance(sinfo, TensorStructInfo)
    shape = [1] * sinfo.ndim
    shape[a["axis"] % sinfo.ndim] = -1
    dtype = str(sinfo.dtype)
    scale = const(np.asarray(s).reshape(shape).astype(dtype))
    return scale, const(np.asarray(t).reshape(shape).astype(dtype))


class _Simplify(ExprMutator):
    def __init__(self, mod: IRModule, func: Function) -> None:
        super().__init__(mod)
        uses = use_counts(func)
        bindings = [b for b in pre_order_nodes(func.body) if isinstance(b, VarBinding)]
        self.norms = {id(b.var): b.value for b in bindings if _constant_batch_norm(b.value)}
        outputs: dict[int, int] = {}
        for b in bindings:
            v = b.value
            if isinstance(v, TupleGetItem) and v.index == 0 and id(v.tuple_value) in self.norms:
                outputs[id(v.tuple_value)] = outputs.get(id(v.tuple_value), 0) + 1
        self.dropped = {k for k, n in outputs.items() if n == uses.get(k, 0)}

    def visit_binding(self, b: Binding) -> None:
        if isinstance(b, VarBinding) and id(b.var) in self.dropped:
            return None
        v = b.value
        if isinstance(b, VarBinding) and isinstance(v, TupleGetItem) and v.index == 0:
            call = self.norms.get(id(v.tuple_value))
            if call is not None:
                scale, shift = _affine(call)
                scaled = self.builder.emit(R.multiply(self.visit(call.args[0]), scale), "bn_scaled")
                return self.reemit(b, R.add(scaled, shift))
        return super().visit_binding(b)


@dataclass(frozen=True)
class SimplifyInference(FunctionPass):
    """Constant-statistics ``batch_norm`` outputs as ``x * s + t`` (see the module docstring)."""

    name: ClassVar[str] = "simplify-inference"

    def transform(self, gv: GlobalVar, func: Function, mod: IRModule, ctx: PassContext) -> BaseFunc:
        if not is_lowerable(func):
            return func
        s = _Simplify(mod, func)
        return s.visit(func) if s.norms else func


__all__ = ["SimplifyInference"]
