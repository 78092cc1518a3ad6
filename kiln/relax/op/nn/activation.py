"""Neural-network activations, softmax, dropout and padding (``relax.nn.*``).

``relu`` (numeric), ``gelu`` / ``gelu_tanh`` / ``silu`` (float) are element-wise; ``softmax`` /
``log_softmax`` normalize along ``axis`` (float, pattern ``OPAQUE`` as in `kiln.topi`);
``dropout`` is the identity at inference and returns ``(output, mask)``; ``pad`` adds
``pad_width`` (``[before_0, after_0, before_1, ...]``) elements of ``pad_value`` (``INJECTIVE``).
"""

from __future__ import annotations

from typing import Any

from kiln import te, topi
from kiln.ir.op import Op
from kiln.relax.expr import Call, Expr
from kiln.relax.op.common import (
    as_expr,
    attrs,
    check_arity,
    fail,
    int_list,
    normalize_axis,
    out_tensor,
    require_float,
    tensor_sinfo,
)
from kiln.relax.op.registry import register_op
from kiln.relax.op.unary import make_unary
from kiln.relax.struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from kiln.topi.tag import Pattern

relu = make_unary("relu", topi.relu, "numeric", "``max(x, 0)``.", family="relax.nn")
gelu = make_unary("gelu", topi.gelu, "float", "GELU (erf form).", family="relax.nn")
gelu_tanh = make_unary(
    "gelu_tanh",
    lambda x: topi.gelu(x, approximate="tanh"),
    "float",
    "GELU (tanh approximation).",
    family="relax.nn",
)
silu = make_unary("silu", topi.silu, "float", "``x * sigmoid(x)``.", family="relax.nn")


def _infer_softmax(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 1)
    x = tensor_sinfo(call, 0, "the operand")
    require_float(call, x)
    if x.ndim >= 0:
        normalize_axis(call, call.attrs["axis"], x.ndim)
    return x


@register_op(
    "relax.nn.softmax",
    infer=_infer_softmax,
    legalize=lambda call, args: topi.nn.softmax(args[0], call.attrs["axis"]),
    pattern=Pattern.OPAQUE,
)
def softmax(data: Expr, axis: int = -1) -> Call:
    """``exp(x) / sum(exp(x))`` along ``axis``."""
    return Call(Op.get("relax.nn.softmax"), (as_expr(data),), attrs(axis=axis))


@register_op(
    "relax.nn.log_softmax",
    infer=_infer_softmax,
    legalize=lambda call, args: topi.nn.log_softmax(args[0], call.attrs["axis"]),
    pattern=Pattern.OPAQUE,
)
def log_softmax(data: Expr, axis: int = -1) -> Call:
    """``log(softmax(x))`` along ``axis``."""
    return Call(Op.get("relax.nn.log_softmax"), (as_expr(data),), attrs(axis=axis))


def _infer_dropout(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 1)
    x = tensor_sinfo(call, 0, "the operand")
    rate = call.attrs["rate"]
    if not 0.0 <= rate < 1.0:
        raise fail(call, f"rate must be in [0, 1), got {rate!r}")
    return TupleStructInfo((x, x))


def _legalize_dropout(call: Call, args: list[Any]) -> Any:
    x = args[0]
    out = te.compute(x.shape, lambda *i: x[i], name="T_dropout")
    mask = topi.full_like(x, 1)
    return [out, mask]


@register_op(
    "relax.nn.dropout",
    infer=_infer_dropout,
    legalize=_legalize_dropout,
    pattern=Pattern.ELEMWISE,
)
def dropout(data: Expr, rate: float = 0.5) -> Call:
    """Inference-time dropout: ``(data, ones_like(data))`` (the output and the keep mask)."""
    return Call(Op.get("relax.nn.dropout"), (as_expr(data),), attrs(rate=float(rate)))


def _infer_pad(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 1)
    x = tensor_sinfo(call, 0, "the operand")
    widths = call.attrs["pad_width"]
    if call.attrs["pad_mode"] != "constant":
        raise fail(call, f"only pad_mode='constant' is supported, got {call.attrs['pad_mode']!r}")
    if x.ndim >= 0 and len(widths) != 2 * x.ndim:
        raise fail(
            call, f"pad_width needs {2 * x.ndim} values for a rank-{x.ndim} tensor, got {widths}"
        )
    if any(w < 0 for w in widths):
        raise fail(call, f"pad_width must be non-negative, got {list(widths)}")
    dims = x.dims
    if dims is None:
        return TensorStructInfo(None, x.dtype, x.ndim)
    return out_tensor([d + widths[2 * k] + widths[2 * k + 1] for k, d in enumerate(dims)], x.dtype)


def _legalize_pad(call: Call, args: list[Any]) -> Any:
    w = call.attrs["pad_width"]
    pairs = [(w[2 * k], w[2 * k + 1]) for k in range(len(w) // 2)]
    return topi.pad(args[0], pairs, call.attrs["pad_value"])


@register_op("relax.nn.pad", infer=_infer_pad, legalize=_legalize_pad, pattern=Pattern.INJECTIVE)
def pad(data: Expr, pad_width: Any, pad_value: float = 0.0, pad_mode: str = "constant") -> Call:
    """``data`` padded by ``pad_width`` = ``[before_0, after_0, before_1, after_1, ...]``."""
    widths = int_list(pad_width, "relax.nn.pad: pad_width")
    return Call(
        Op.get("relax.nn.pad"),
        (as_expr(data),),
        attrs(pad_width=widths, pad_value=pad_value, pad_mode=pad_mode),
    )
