"""Broadcasting binary operators: arithmetic, comparisons, logic; and ``where``.

Operands broadcast with numpy's rules (symbolic dims must be provably equal or 1; otherwise the
result has a known rank only). Arithmetic keeps the (common) dtype; comparisons give ``bool``;
``logical_and`` / ``logical_or`` / ``logical_xor`` take and give ``bool``. Pattern: ``BROADCAST``.

Division rounds three ways, each one record: ``floor_divide`` (numpy's ``//``), ``trunc_divide``
(C's integer ``/``: ONNX's integer ``Div``), and their remainders ``floor_mod`` (numpy's ``%``)
and ``trunc_mod`` (``numpy.fmod``); `kiln.topi.division` says what each does with floats and a
zero divisor. ``power`` raises integers too, exactly (wrapping like numpy).

``relax.nn.prelu`` lives here too: its slope broadcasts like a binary operand, and
`AlterOpLayout` keeps channel-blocked layouts through this family's operators.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kiln import topi
from kiln.ir.op import Op
from kiln.relax.expr import Call, Expr
from kiln.relax.op.common import (
    BOOL,
    as_expr,
    broadcast_dims,
    check_arity,
    describe,
    fail,
    is_one,
    out_tensor,
    require_bool,
    require_float,
    require_numeric,
    same_dtype,
    tensor_sinfo,
)
from kiln.relax.op.registry import register_op
from kiln.relax.struct_info import StructInfo
from kiln.tir import op as tir_op
from kiln.tir.expr import Select, const
from kiln.topi.tag import Pattern


def infer_broadcast(call: Call, n: int, kind: str) -> StructInfo:
    """The broadcast of ``n`` tensor operands; ``kind``: ``"arith"``, ``"numeric"`` (arithmetic
    refusing ``bool``), ``"float"`` (float math), ``"compare"``, ``"logical"`` (dtype rules in
    `relax.op.common`)."""
    check_arity(call, n)
    infos = [tensor_sinfo(call, i, f"operand {i}") for i in range(n)]
    if kind == "logical":
        for i, s in enumerate(infos):
            require_bool(call, s, i)
        dtype = BOOL
    else:
        if kind == "numeric":
            for i, s in enumerate(infos):
                require_numeric(call, s, i)
        if kind == "float":
            for i, s in enumerate(infos):
                require_float(call, s, i)
        dtype = same_dtype(call, infos)
        if kind == "compare":
            dtype = BOOL
    dims = broadcast_dims(call, infos)
    ndim = -1 if any(s.ndim < 0 for s in infos) else max(s.ndim for s in infos)
    for s in infos:  # NOTE: reuse an operand's struct info when it is the result (common case)
        same = s.dims is not None and dims is not None and len(s.dims) == len(dims)
        if same and s.dtype == dtype and all(a is b for a, b in zip(s.dims, dims)):
            return s
    return out_tensor(dims, dtype, ndim)


def make_binary(name: str, fn: Callable[[Any, Any], Any], kind: str, doc: str) -> Callable:
    """Register the broadcasting binary operator ``relax.<name>`` computed by ``fn``."""
    full = f"relax.{name}"

    def builder(x1: Expr, x2: Expr) -> Call:
        return Call(Op.get(full), (as_expr(x1), as_expr(x2)))

    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = doc
    register_op(
        full,
        infer=lambda call, ctx: infer_broadcast(call, 2, kind),
        legalize=lambda call, args: fn(args[0], args[1]),
        pattern=Pattern.BROADCAST,
    )(builder)
    return builder


def _true_divide(a: Any, b: Any) -> Any:
    return topi.divide(a, b)


add = make_binary("add", topi.add, "arith", "``x1 + x2``.")
subtract = make_binary("subtract", topi.subtract, "arith", "``x1 - x2``.")
multiply = make_binary("multiply", topi.multiply, "arith", "``x1 * x2``.")
divide = make_binary("divide", _true_divide, "arith", "``x1 / x2`` (true division).")
floor_divide = make_binary("floor_divide", topi.floor_divide, "arith", "``x1 // x2``.")
trunc_divide = make_binary("trunc_divide", topi.trunc_divide, "numeric",
                           "``x1 / x2`` rounded toward zero (C's integer division).")  # fmt: skip
floor_mod = make_binary("floor_mod", topi.floor_mod, "numeric",
                        "``x1 % x2`` with the sign of ``x2`` (``numpy.mod``).")  # fmt: skip
trunc_mod = make_binary("trunc_mod", topi.trunc_mod, "numeric",
                        "The remainder with the sign of ``x1`` (``numpy.fmod``).")  # fmt: skip
power = make_binary("power", topi.power, "numeric", "``x1 ** x2`` (integers: exact, wrapping).")
maximum = make_binary("maximum", topi.maximum, "arith", "The element-wise maximum.")
minimum = make_binary("minimum", topi.minimum, "arith", "The element-wise minimum.")
equal = make_binary("equal", topi.equal, "compare", "``x1 == x2`` (bool).")
not_equal = make_binary("not_equal", topi.not_equal, "compare", "``x1 != x2`` (bool).")
less = make_binary("less", topi.less, "compare", "``x1 < x2`` (bool).")
less_equal = make_binary("less_equal", topi.less_equal, "compare", "``x1 <= x2`` (bool).")
greater = make_binary("greater", topi.greater, "compare", "``x1 > x2`` (bool).")
greater_equal = make_binary("greater_equal", topi.greater_equal, "compare", "``x1 >= x2``.")
atan2 = make_binary(
    "atan2",
    lambda a, b: topi.elemwise.binary("atan2", a, b, lambda y, x: tir_op.math("atan2", y, x)),
    "float",
    "The angle of the point ``(x2, x1)``: ``atan(x1 / x2)`` in the right quadrant (float).",
)
logical_and = make_binary("logical_and", topi.logical_and, "logical", "``x1 and x2`` (bool).")
logical_or = make_binary("logical_or", topi.logical_or, "logical", "``x1 or x2`` (bool).")
logical_xor = make_binary("logical_xor", topi.logical_xor, "logical", "``x1 != x2`` (bool).")


def _infer_where(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 3)
    cond = tensor_sinfo(call, 0, "the condition")
    require_bool(call, cond, 0)
    branch = [tensor_sinfo(call, 1, "x1"), tensor_sinfo(call, 2, "x2")]
    dtype = same_dtype(call, branch, start=1)
    infos = [cond, *branch]
    dims = broadcast_dims(call, infos)
    ndim = -1 if any(s.ndim < 0 for s in infos) else max(s.ndim for s in infos)
    return out_tensor(dims, dtype, ndim)


@register_op(
    "relax.where",
    infer=_infer_where,
    legalize=lambda call, args: topi.where(args[0], args[1], args[2]),
    pattern=Pattern.BROADCAST,
)
def where(condition: Expr, x1: Expr, x2: Expr) -> Call:
    """``x1`` where ``condition`` holds, else ``x2`` (broadcasting all three)."""
    return Call(Op.get("relax.where"), (as_expr(condition), as_expr(x1), as_expr(x2)))


def _infer_prelu(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 2)
    x, slope = tensor_sinfo(call, 0, "the data"), tensor_sinfo(call, 1, "the slope")
    require_numeric(call, x)
    same_dtype(call, [x, slope])
    dims = broadcast_dims(call, [x, slope])
    stretched = slope.ndim > x.ndim >= 0
    if dims is not None and x.dims is not None and len(dims) == len(x.dims):
        stretched = any(a is not b and not (is_one(a) and is_one(b)) for a, b in zip(dims, x.dims))
    if stretched:
        raise fail(call, f"the slope {describe(call.args[1])} must broadcast to the data's "
                   f"shape, without stretching {describe(call.args[0])}")  # fmt: skip
    return x


@register_op(
    "relax.nn.prelu",
    infer=_infer_prelu,
    legalize=lambda call, args: topi.nn.prelu(args[0], args[1]),
    pattern=Pattern.BROADCAST,
)
def prelu(data: Expr, slope: Expr) -> Call:
    """``data``, times ``slope`` where it is negative; ``slope`` broadcasts to ``data`` with
    numpy's rules (per channel of NCHW: ``[C, 1, 1]``). NOTE: TVM's takes a 1-D ``alpha`` and
    an ``axis``; reshape such a slope to ``[C, 1, ..., 1]``."""
    return Call(Op.get("relax.nn.prelu"), (as_expr(data), as_expr(slope)))


# -- bitwise ------------------------------------------------------------------------------------
def _shift(left: bool) -> Callable[[Any, Any], Any]:
    """``a << b`` / ``a >> b``, 0 where the shift is negative or at least the bit width (C
    leaves those undefined)."""

    def compute(a: Any, b: Any) -> Any:
        def f(x: Any, y: Any) -> Any:
            zero = const(0, x.dtype)
            out = x << y if left else x >> y
            wide = (y < const(0, y.dtype)) | (y >= const(x.dtype.bits, y.dtype))
            if not left and not x.dtype.is_uint:  # NOTE: an arithmetic shift saturates at -1
                zero = Select(x < zero, const(-1, x.dtype), zero)
            return Select(wide, zero, out)

        return topi.elemwise.binary("left_shift" if left else "right_shift", a, b, f)

    return compute


def _int_infer(call: Call, ctx: Any) -> StructInfo:
    out = infer_broadcast(call, len(call.args), "arith")
    for i in range(len(call.args)):
        dt = tensor_sinfo(call, i).dtype
        if not dt.is_void and not dt.is_integer:
            raise fail(call, f"needs integer tensors, got {describe(call.args[i])}")
    return out


def make_int_binary(name: str, fn: Callable[[Any, Any], Any], doc: str) -> Callable:
    """Register ``relax.<name>``: a broadcasting operator of integer tensors."""
    full = f"relax.{name}"

    def builder(x1: Expr, x2: Expr) -> Call:
        return Call(Op.get(full), (as_expr(x1), as_expr(x2)))

    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = doc
    register_op(
        full,
        infer=_int_infer,
        legalize=lambda call, args: fn(args[0], args[1]),
        pattern=Pattern.BROADCAST,
    )(builder)
    return builder


def _bitwise(name: str, f: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    return lambda a, b: topi.elemwise.binary(name, a, b, f)


bitwise_and = make_int_binary("bitwise_and", _bitwise("bitwise_and", lambda x, y: x & y),
                              "``x1 & x2`` of integer tensors.")  # fmt: skip
bitwise_or = make_int_binary("bitwise_or", _bitwise("bitwise_or", lambda x, y: x | y),
                             "``x1 | x2`` of integer tensors.")  # fmt: skip
bitwise_xor = make_int_binary("bitwise_xor", _bitwise("bitwise_xor", lambda x, y: x ^ y),
                              "``x1 ^ x2`` of integer tensors.")  # fmt: skip
left_shift = make_int_binary("left_shift", _shift(True),
                             "``x1 << x2`` (0 for shifts outside [0, bits)).")  # fmt: skip
right_shift = make_int_binary("right_shift", _shift(False),
                              "``x1 >> x2`` (0 for shifts outside [0, bits)).")  # fmt: skip
