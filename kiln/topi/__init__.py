"""kiln's operator library: operators written as tensor expressions, with default schedules.

Each operator is a function from `te.Tensor`s to `te.Tensor`s whose computes carry a tag and a
fusion pattern (`kiln.topi.tag`). `schedule_for(outputs)` picks a default CPU schedule by
pattern; `kiln.build_op(outputs, args)` schedules, lowers and builds in one call:

    x = te.placeholder((128, 1024), name="x")
    y = topi.nn.softmax(x)
    f = kiln.build_op(y, [x, y])
    f(x_np, y_np)
"""

from kiln.topi import (
    cuda,  # default CUDA schedules (schedule_for(..., target="cuda"))
    nn,
    tag,
    x86,  # registers the dense / conv2d CPU schedules with schedule_for
)
from kiln.topi.elemwise import (
    abs,
    add,
    cast,
    clip,
    divide,
    erf,
    exp,
    gelu,
    log,
    maximum,
    minimum,
    multiply,
    negative,
    power,
    relu,
    sigmoid,
    sqrt,
    subtract,
    tanh,
)
from kiln.topi.reduce import max, mean, min, sum
from kiln.topi.schedule import register_schedule, schedule_for
from kiln.topi.tag import Pattern, pattern_of
from kiln.topi.transform import (
    concatenate,
    gather,
    pad,
    reshape,
    split,
    strided_slice,
    take,
    transpose,
)

__all__ = [
    "Pattern",
    "abs",
    "add",
    "cast",
    "clip",
    "concatenate",
    "cuda",
    "divide",
    "erf",
    "exp",
    "gather",
    "gelu",
    "log",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "multiply",
    "negative",
    "nn",
    "pad",
    "pattern_of",
    "power",
    "register_schedule",
    "relu",
    "reshape",
    "schedule_for",
    "sigmoid",
    "split",
    "sqrt",
    "strided_slice",
    "subtract",
    "sum",
    "tag",
    "take",
    "tanh",
    "transpose",
    "x86",
]
