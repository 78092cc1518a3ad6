"""Tensor expressions: describe an operator as tensors over index axes, schedule its loops, and
lower it to a TIR `PrimFunc`.

    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = te.create_schedule(C)
    io, ii = s[C].split(C.op.axis[0], factor=8)
    f = te.lower(s, [A, B, C])            # or te.create_prim_func([A, B, C])
"""

from kiln.te.elementwise import broadcast_shape, elementwise
from kiln.te.lower import create_prim_func, lower
from kiln.te.operation import compute, if_then_else, placeholder, size_var, var
from kiln.te.prim_annotate import thread_axis
from kiln.te.reduce import CommReducer, Reduce, Reducer, comm_reducer, max, min, reduce_axis, sum
from kiln.te.schedule import Schedule, Stage, create_schedule
from kiln.te.tensor import AxisVar, ComputeOp, Operation, PlaceholderOp, ProducerLoad, Tensor

__all__ = [
    "AxisVar",
    "CommReducer",
    "ComputeOp",
    "Operation",
    "PlaceholderOp",
    "ProducerLoad",
    "Reduce",
    "Reducer",
    "Schedule",
    "Stage",
    "Tensor",
    "broadcast_shape",
    "comm_reducer",
    "compute",
    "create_prim_func",
    "create_schedule",
    "elementwise",
    "if_then_else",
    "lower",
    "max",
    "min",
    "placeholder",
    "reduce_axis",
    "size_var",
    "sum",
    "thread_axis",
    "var",
]
