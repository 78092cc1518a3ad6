"""Element-wise ONNX operators: math, activations, comparisons, logic, ``Cast``, ``Clip``,
``Where`` and the variadic ``Max Min Sum Mean``.

Every operator is one relax operator record (``Mish`` is one ``relax.nn.mish``, ``Sign`` one
``relax.sign``, integer ``Div`` one ``relax.trunc_divide``, ``Mod`` one ``relax.floor_mod`` or
``relax.trunc_mod``), so profiles and fusion see the operator, not a chain. ``Reciprocal`` is
``divide(1, x)``: one record already. Only the variadic ``Max Min Sum Mean``, ``Clip`` with
run-time bounds and a ``Pow`` of an integer base and a float exponent take several calls.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kiln.errors import FrontendError
from kiln.relax import op as R
from kiln.relax.expr import Expr, const
from kiln.relax.frontend.onnx import values as V
from kiln.relax.frontend.onnx.ops import Ctx, Node, converter, dtype, ndim

UNARY = {
    "Abs": R.abs,
    "Neg": R.negative,
    "Exp": R.exp,
    "Log": R.log,
    "Sqrt": R.sqrt,
    "Tanh": R.tanh,
    "Sigmoid": R.sigmoid,
    "Erf": R.erf,
    "Sin": R.sin,
    "Cos": R.cos,
    "Tan": R.tan,
    "Asin": R.asin,
    "Acos": R.acos,
    "Atan": R.atan,
    "Sinh": R.sinh,
    "Cosh": R.cosh,
    "Asinh": R.asinh,
    "Acosh": R.acosh,
    "Atanh": R.atanh,
    "Floor": R.floor,
    "Ceil": R.ceil,
    "Round": R.round,
    "Relu": R.nn.relu,
    "IsNaN": R.isnan,
    "Sign": R.sign,
    "Not": R.logical_not,
    "BitwiseNot": R.bitwise_not,
}

BINARY = {
    "Add": R.add,
    "Sub": R.subtract,
    "Mul": R.multiply,
    "Equal": R.equal,
    "Less": R.less,
    "Greater": R.greater,
    "LessOrEqual": R.less_equal,
    "GreaterOrEqual": R.greater_equal,
    "And": R.logical_and,
    "Or": R.logical_or,
    "Xor": R.logical_xor,
    "BitwiseAnd": R.bitwise_and,
    "BitwiseOr": R.bitwise_or,
    "BitwiseXor": R.bitwise_xor,
}


def scalar(value: float, like: Any) -> Expr:
    """A 0-d constant of ``like``'s dtype."""

    return const(np.array(value, dtype=np.dtype(dtype(like))))


@converter(*UNARY)
def _unary(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    return ctx.emit(UNARY[node.op_type](ctx.tensor(ins, 0)))


@converter(*BINARY)
def _binary(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    a, b = ctx.broadcastable(ctx.tensor(ins, 0), ctx.tensor(ins, 1))
    return ctx.emit(BINARY[node.op_type](a, b))


@converter("Div")
def _div(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    a, b = ctx.broadcastable(ctx.tensor(ins, 0), ctx.tensor(ins, 1))
    return ctx.emit(R.divide(a, b) if _is_float(a) else R.trunc_divide(a, b))


def _is_float(e: Expr) -> bool:
    return dtype(e).startswith(("float", "bfloat"))


@converter("Mod")
def _mod(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    """``fmod=1``: C's ``fmod`` / ``%``; ``fmod=0``: the divisor's sign (floats from opset 28)."""
    a, b = ctx.broadcastable(ctx.tensor(ins, 0), ctx.tensor(ins, 1))
    fn = R.trunc_mod if node.attrs.get("fmod", 0) else R.floor_mod
    return ctx.emit(fn(a, b))


@converter("Pow")
def _pow(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    """One ``relax.power`` (integers exactly), the exponent cast to the base's dtype. An integer
    base with a float exponent is computed in float64 and truncated, as onnxruntime's
    ``static_cast<T>(std::pow(x, y))``."""
    a, b = ctx.tensor(ins, 0), ctx.tensor(ins, 1)
    if not _is_float(a) and _is_float(b):
        wide = R.power(ctx.emit(R.astype(a, "float64")), ctx.emit(R.astype(b, "float64")))
        return ctx.emit(R.astype(ctx.emit(wide), dtype(a)))
    if dtype(b) != dtype(a):
        b = ctx.expr(ins[1], dtype(a)) if V.is_const(ins[1]) else ctx.emit(R.astype(b, dtype(a)))
    return ctx.emit(R.power(a, b))


@converter("Max", "Min", "Sum", "Mean")
def _variadic(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    fn = {"Max": R.maximum, "Min": R.minimum, "Sum": R.add, "Mean": R.add}[node.op_type]
    items = ctx.broadcastable(*(ctx.expr(v) for v in ins if v is not None))
    out = items[0]
    for x in items[1:]:
        out = ctx.emit(fn(out, x))
    if node.op_type == "Mean" and len(items) > 1:
        out = ctx.emit(R.divide(out, scalar(len(items), out)))
    elif len(items) == 1:
        out = ctx.emit(R.add(out, scalar(0, out))) if dtype(out) != "bool" else out
    return out


@converter("Reciprocal")
def _reciprocal(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    return ctx.emit(R.divide(scalar(1, x), x))


@converter("IsInf")
def _isinf(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    pos, neg = node.attrs.get("detect_positive", 1), node.attrs.get("detect_negative", 1)
    return ctx.emit(R.isinf(ctx.tensor(ins, 0), bool(pos), bool(neg)))


ACTIVATIONS = {
    "Softplus": lambda x, a: R.nn.softplus(x, threshold=float("inf")),
    "Softsign": lambda x, a: R.nn.softsign(x),
    "Mish": lambda x, a: R.nn.mish(x),
    "HardSwish": lambda x, a: R.nn.hardswish(x),
    "HardSigmoid": lambda x, a: R.nn.hardsigmoid(x, a.get("alpha", 0.2), a.get("beta", 0.5)),
    "LeakyRelu": lambda x, a: R.nn.leakyrelu(x, a.get("alpha", 0.01)),
    "Elu": lambda x, a: R.nn.elu(x, a.get("alpha", 1.0)),
    "Selu": lambda x, a: R.nn.selu(
        x, a.get("alpha", 1.67326319217681884765625), a.get("gamma", 1.05070102214813232421875)
    ),
    "Celu": lambda x, a: R.nn.celu(x, a.get("alpha", 1.0)),
    "ThresholdedRelu": lambda x, a: R.nn.thresholded_relu(x, a.get("alpha", 1.0)),
    "Shrink": lambda x, a: R.nn.shrink(x, a.get("lambd", 0.5), a.get("bias", 0.0)),
}
"""Activations that are one relax record each, built from the node's attributes (ONNX's
defaults where absent)."""


@converter(*ACTIVATIONS)
def _activation(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    return ctx.emit(ACTIVATIONS[node.op_type](ctx.tensor(ins, 0), node.attrs))


@converter("Swish")
def _swish(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    alpha = node.attrs.get("alpha", 1.0)
    return ctx.emit(R.nn.silu(x) if alpha == 1.0 else R.nn.swish(x, alpha))


@converter("PRelu")
def _prelu(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    return ctx.emit(R.nn.prelu(ctx.tensor(ins, 0), ctx.tensor(ins, 1)))


@converter("Gelu")
def _gelu(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    approx = node.attrs.get("approximate", "none")
    return ctx.emit(R.nn.gelu_tanh(x) if approx == "tanh" else R.nn.gelu(x))


@converter("Clip")
def _clip(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    lo = ins[1] if len(ins) > 1 else node.attrs.get("min")
    hi = ins[2] if len(ins) > 2 else node.attrs.get("max")
    bounds = (_scalar_value(lo, x), _scalar_value(hi, x))
    if bounds[0] is not None and bounds[1] is not None and bounds[0] <= bounds[1]:
        return ctx.emit(R.clip(x, bounds[0], bounds[1]))
    # NOTE: one bound, run-time bounds, or min > max (ONNX: every value becomes max)
    out = x
    for bound, fn in ((lo, R.maximum), (hi, R.minimum)):
        if bound is None:
            continue
        b = ctx.expr(np.asarray(bound, dtype=dtype(x)) if not isinstance(bound, Expr) else bound)
        out = ctx.emit(fn(out, b))
    return out if out is not x else ctx.emit(R.add(x, scalar(0, x)))


def _scalar_value(bound: Any, like: Expr) -> float | int | None:
    """A constant one-element bound as a Python number of ``like``'s kind, else None."""
    if bound is None or isinstance(bound, Expr):
        return None
    arr = np.asarray(bound)
    if arr.dtype == object or arr.size != 1:
        return None
    value = arr.astype(np.dtype(dtype(like))).reshape(-1)[0]
    return float(value) if _is_float(like) else int(value)


@converter("Where")
def _where(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    cond, a, b = ctx.broadcastable(*(ctx.tensor(ins, k) for k in range(3)))
    return ctx.emit(R.where(cond, a, b))


@converter("Cast", "CastLike")
def _cast(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    if node.op_type == "CastLike" and V.is_const(ins[0]):
        return ins[0].astype(np.dtype(dtype(ins[1] if V.is_const(ins[1]) else ctx.expr(ins[1]))))
    x = ctx.tensor(ins, 0)
    if node.op_type == "CastLike":
        to = dtype(ins[1]) if not isinstance(ins[1], Expr) else dtype(ctx.tensor(ins, 1))
    else:
        to = V.onnx_dtype(node.attrs["to"], "Cast")
    if to == dtype(x):
        return x
    if to == "bool":
        return ctx.emit(R.not_equal(x, scalar(0, x)))
    if dtype(x) == "bool":
        return ctx.emit(R.astype(x, to))
    return ctx.emit(R.astype(x, to))


@converter("Identity")
def _identity(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    return ins[0]


@converter("Dropout")
def _dropout(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    if len(ins) > 2 and ins[2] is not None:
        training = ctx.const(ins[2], "Dropout's training_mode")
        if bool(training.reshape(-1)[0]):
            has_ratio = len(ins) > 1 and ins[1] is not None
            ratio = ctx.const(ins[1], "Dropout's ratio") if has_ratio else np.float32(0.5)
            zero = float(np.asarray(ratio).reshape(-1)[0]) == 0.0
        if bool(training.reshape(-1)[0]) and not zero:
            raise FrontendError("Dropout in training mode is not supported (it is random)")
    x = ctx.tensor(ins, 0)
    if len(node.outputs) > 1 and node.outputs[1]:
        mask = ctx.emit(R.ones_like(x, "bool") if ndim(x) >= 0 else x)
        return [x, mask]
    return [x]


@converter("BitShift")
def _bit_shift(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    a, b = ctx.tensor(ins, 0), ctx.tensor(ins, 1)
    fn = R.left_shift if node.attrs["direction"] == "LEFT" else R.right_shift
    return ctx.emit(fn(a, b))
