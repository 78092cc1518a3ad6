"""Per-target computes: which TE compute `LowerTE` uses for an operator call.

An operator's record holds its target-independent definition (``legalize``, composing
`kiln.topi`). For a CPU target, the operator library also has CPU computes of the same values
for the compute-heavy anchors (`kiln.topi.x86`: packed, padded stages that `schedule_for` turns
into register-blocked kernels whose element-wise epilogue is written in the same loop nest as
the output). `compute_for` picks that one when it applies (constant shapes -- a blocked
convolution's batch may be symbolic --, no dtype change) and the record's legalization
otherwise. NOTE: the table is keyed by operator name, as TVM's
op strategies are; the record stays the one place that defines what an operator computes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kiln import topi
from kiln.ir.target import Target
from kiln.relax.expr import Call
from kiln.relax.op.registry import OpDef
from kiln.tir.expr import IntImm
from kiln.topi.utils import const_int

CpuCompute = Callable[[Call, list[Any], bool, Target], Any]


def _static_dims(dims: Any) -> bool:
    return all(isinstance(d, (int, IntImm)) for d in dims)


def _static(*tensors: Any) -> bool:
    return all(_static_dims(t.shape) for t in tensors)


def _batch_only(t: Any) -> bool:
    """Whether every dimension of ``t`` but the first (a batch) is constant."""
    return _static_dims(t.shape[1:])


def _conv2d(call: Call, args: list[Any], epilogue: bool, target: Target) -> Any:
    a = call.attrs
    data, weight = args
    if a["out_dtype"] is not None and str(a["out_dtype"]) != str(data.dtype):
        return None
    if not _static(weight) or not _static(data) and (data.ndim != 5 or not _batch_only(data)):
        return None
    make = topi.x86.conv2d_nchwc if data.ndim == 5 else topi.x86.conv2d_nchw
    return make(data, weight, a["strides"], a["padding"], a["dilation"], a["groups"], target=target)


def _matmul(call: Call, args: list[Any], epilogue: bool, target: Target) -> Any:
    a, b = args
    # NOTE: `schedule_for` fails on the packed matmul when its copy-out stage is itself an output
    # (the plain "matmul" schedule is applied to that copy); with an epilogue the copy is
    # inlined and the packed kernel is used. Without one, the plain compute is scheduled.
    if not epilogue or a.ndim != 2 or b.ndim != 2 or not _static(a, b):
        return None
    if str(call.struct_info.dtype) != str(a.dtype):
        return None
    return topi.x86.matmul(a, b, target=target)


def _matmul_packed(call: Call, args: list[Any], epilogue: bool, target: Target) -> Any:
    # NOTE: x's leading extents (tokens, batch) may be symbolic: the kernel takes whole row tiles
    x, panels = args
    if not _static(panels) or const_int(x.shape[-1]) is None:
        return None
    return topi.x86.matmul_packed(x, panels, call.attrs["units"], target=target)


def _attention(call: Call, args: list[Any], epilogue: bool, target: Target) -> Any:
    bias = args[3] if len(args) == 4 else None
    return topi.x86.attention(*args[:3], bias, call.attrs["scale"], target=target)


CPU_COMPUTES: dict[str, CpuCompute] = {
    "relax.nn.attention": _attention,
    "relax.nn.conv2d": _conv2d,
    "relax.matmul": _matmul,
    "relax.matmul_packed": _matmul_packed,
}
"""operator name -> CPU compute (returns None where it does not apply)."""


def compute_for(
    rec: OpDef, call: Call, args: list[Any], target: Target, epilogue: bool = False
) -> Any:
    """The TE value of ``call`` for ``target`` (see the module docstring); ``epilogue`` says
    that the call's value is read by other computes of the same PrimFunc."""
    fn = CPU_COMPUTES.get(rec.name) if target.device == "cpu" else None
    out = fn(call, args, epilogue, target) if fn is not None else None
    if out is None:
        assert rec.legalize is not None
        out = rec.legalize(call, args)
    return out
