"""Graph-level operators: ``relax.op.add(x, y)`` builds a call; its record (`OpDef`, in
`relax.op.registry`) says how to infer, legalize and fuse it."""

from kiln.relax.op import image, memory, nn, random
from kiln.relax.op.binary import (
    add,
    atan2,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    divide,
    equal,
    floor_divide,
    floor_mod,
    greater,
    greater_equal,
    left_shift,
    less,
    less_equal,
    logical_and,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    multiply,
    not_equal,
    power,
    right_shift,
    subtract,
    trunc_divide,
    trunc_mod,
    where,
)
from kiln.relax.op.builtin import (
    call_dps_packed,
    call_lowered,
    call_packed,
    call_pure_packed,
    call_tir,
    shape_of,
)
from kiln.relax.op.create import (
    arange,
    full,
    full_like,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from kiln.relax.op.layout import layout_transform, matmul_packed
from kiln.relax.op.linear_algebra import linear, matmul
from kiln.relax.op.manipulate import (
    broadcast_to,
    concat,
    expand_dims,
    flatten,
    gather_elements,
    gather_nd,
    permute_dims,
    reshape,
    split,
    squeeze,
    strided_slice,
    take,
)
from kiln.relax.op.reduce import argmax, argmin, max, mean, min, prod, sum, variance
from kiln.relax.op.registry import OpDef, find_op_def, get_op_def, list_op_defs, register_op
from kiln.relax.op.scan import cumprod, cumsum
from kiln.relax.op.scatter import scatter_elements, scatter_nd
from kiln.relax.op.unary import (
    abs,
    acos,
    acosh,
    asin,
    asinh,
    astype,
    atan,
    atanh,
    bitwise_not,
    ceil,
    clip,
    cos,
    cosh,
    erf,
    exp,
    expm1,
    floor,
    isfinite,
    isinf,
    isnan,
    log,
    log1p,
    log2,
    log10,
    logical_not,
    negative,
    round,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sinh,
    sqrt,
    tan,
    tanh,
    trunc,
)
from kiln.relax.op.vm import call_builtin_with_ctx, null_value

__all__ = [name for name in dir() if not name.startswith("_")]
