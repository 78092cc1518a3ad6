"""Neural-network activations, softmax, dropout and padding (``relax.nn.*``).

``relu`` (numeric), ``gelu`` / ``gelu_tanh`` / ``silu`` (float) are element-wise, and so is every
activation ONNX or PyTorch names as one operator (``softplus``, ``mish``, ``hardswish``,
``leakyrelu``, ``elu``...: float only, their constants as attributes, computed by
`kiln.topi.nn.activation`), so a model's ``Mish`` is one ``relax.nn.mish`` call in profiles and
fusion, not an ``exp``/``log``/``tanh`` chain. ``prelu``, which broadcasts a slope tensor, is
in `relax.op.binary`. ``softmax`` /
``log_softmax`` normalize along ``axis`` (float, pattern ``OPAQUE`` as in `kiln.topi`);
``dropout`` is the identity at inference and returns ``(output, mask)``; ``pad`` adds
``pad_width`` (``[before_0, after_0, before_1, ...]``) elements of ``pad_value`` (``INJECTIVE``).
"""

from __future__ import annotations

from collections.abc import Callable
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
    plain,
    require_float,
    tensor_sinfo,
)
from kiln.relax.op.registry import register_op
from kiln.relax.op.unary import infer_unary, make_unary
from kiln.relax.struct_info import StructInfo, TensorStructInfo, TupleStructInfo
from kiln.topi.nn.activation import SELU_ALPHA, SELU_SCALE
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


Check = Callable[[Call], None]
_infer_float = infer_unary("float")


def activation(name: str, compute: Callable[..., Any], check: Check | None = None) -> Any:
    """Decorator: the builder of the float activation ``relax.nn.<name>``, legalized as
    ``compute(x, **attrs)`` (``check`` validates the attributes when the call is normalized)."""

    def infer(call: Call, ctx: Any) -> StructInfo:
        out = _infer_float(call, ctx)
        if check is not None:
            check(call)
        return out

    return register_op(
        f"relax.nn.{name}",
        infer=infer,
        legalize=lambda call, args: compute(args[0], **call.attrs),
        pattern=Pattern.ELEMWISE,
    )


def _call(name: str, data: Expr, **values: Any) -> Call:
    items = {k: float(plain(v)) for k, v in values.items()}
    return Call(Op.get(f"relax.nn.{name}"), (as_expr(data),), attrs(**items))


def _nonzero(attr: str) -> Check:
    def check(call: Call) -> None:
        if call.attrs[attr] == 0:
            raise fail(call, f"{attr} must be non-zero, got {call.attrs[attr]!r}")

    return check


@activation("softplus", topi.nn.softplus, _nonzero("beta"))
def softplus(data: Expr, beta: float = 1.0, threshold: float = 20.0) -> Call:
    """``log(1 + exp(beta * x)) / beta``, and ``x`` where ``beta * x > threshold`` (PyTorch's;
    ONNX's ``Softplus`` is ``threshold=inf``)."""
    return _call("softplus", data, beta=beta, threshold=threshold)


@activation("hardsigmoid", topi.nn.hardsigmoid)
def hardsigmoid(data: Expr, alpha: float = 0.2, beta: float = 0.5) -> Call:
    """``min(max(alpha * x + beta, 0), 1)`` (PyTorch's is ``alpha = 1/6``)."""
    return _call("hardsigmoid", data, alpha=alpha, beta=beta)


def _with_alpha(name: str, compute: Callable[..., Any], default: float, doc: str,
                check: Check | None = None) -> Callable[..., Call]:  # fmt: skip
    """Register ``relax.nn.<name>(data, alpha=default)``, computed by ``compute``."""

    def builder(data: Expr, alpha: float = default) -> Call:
        return _call(name, data, alpha=alpha)

    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = doc
    return activation(name, compute, check)(builder)


mish = make_unary("mish", topi.nn.mish, "float", "``x * tanh(softplus(x))``.", "relax.nn")
hardswish = make_unary(
    "hardswish",
    topi.nn.hardswish,
    "float",
    "``x * min(max(x / 6 + 1/2, 0), 1)``, which is PyTorch's ``x * relu6(x + 3) / 6``.",
    "relax.nn",
)
softsign = make_unary("softsign", topi.nn.softsign, "float", "``x / (1 + |x|)``.", "relax.nn")
swish = _with_alpha(
    "swish", topi.nn.swish, 1.0, "``x * sigmoid(alpha * x)`` (ONNX's; ``silu`` is ``alpha = 1``)."
)
leakyrelu = _with_alpha(
    "leakyrelu", topi.nn.leaky_relu, 0.01, "``x``, times ``alpha`` where it is negative."
)
elu = _with_alpha(
    "elu", topi.nn.elu, 1.0, "``x`` where ``x > 0``, ``alpha * (exp(x) - 1)`` elsewhere."
)
celu = _with_alpha(
    "celu",
    topi.nn.celu,
    1.0,
    "``x`` where ``x > 0``, ``alpha * (exp(x / alpha) - 1)`` elsewhere.",
    _nonzero("alpha"),
)
thresholded_relu = _with_alpha(
    "thresholded_relu", topi.nn.thresholded_relu, 1.0, "``x`` where ``x > alpha``, else 0."
)


@activation("selu", topi.nn.selu)
def selu(data: Expr, alpha: float = SELU_ALPHA, gamma: float = SELU_SCALE) -> Call:
    """``gamma * elu(x, alpha)``, with SELU's constants by default."""
    return _call("selu", data, alpha=alpha, gamma=gamma)


@activation("shrink", topi.nn.shrink)
def shrink(data: Expr, lambd: float = 0.5, bias: float = 0.0) -> Call:
    """``x + bias`` below ``-lambd``, ``x - bias`` above ``lambd``, 0 between."""
    return _call("shrink", data, lambd=lambd, bias=bias)


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
    if call.attrs["pad_mode"] not in ("constant", "reflect", "edge"):
        mode = call.attrs["pad_mode"]
        raise fail(call, f"pad_mode must be 'constant', 'reflect' or 'edge', got {mode!r}")
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
    if call.attrs["pad_mode"] != "constant":
        return topi.transform.mirror_pad(args[0], pairs, call.attrs["pad_mode"])
    return topi.pad(args[0], pairs, call.attrs["pad_value"])


@register_op("relax.nn.pad", infer=_infer_pad, legalize=_legalize_pad, pattern=Pattern.INJECTIVE)
def pad(data: Expr, pad_width: Any, pad_value: float = 0.0, pad_mode: str = "constant") -> Call:
    """``data`` padded by ``pad_width`` = ``[before_0, after_0, before_1, after_1, ...]``:
    with ``pad_value`` (``pad_mode="constant"``), or with its own elements mirrored about the
    edge (``"reflect"``) or repeated (``"edge"``; `kiln.topi.transform.mirror_pad`)."""
    widths = int_list(pad_width, "relax.nn.pad: pad_width")
    return Call(
        Op.get("relax.nn.pad"),
        (as_expr(data),),
        attrs(pad_width=widths, pad_value=pad_value, pad_mode=pad_mode),
    )
