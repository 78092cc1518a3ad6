"""Normalizations: ``relax.nn.batch_norm`` (inference) and ``relax.nn.layer_norm``.

``batch_norm(data, gamma, beta, moving_mean, moving_var, axis)`` returns the tuple
``(output, moving_mean, moving_var)`` (inference mode: the statistics pass through unchanged).
``layer_norm(data, gamma, beta, axes)`` normalizes over the trailing ``axes``. Float tensors;
``center=False`` drops ``beta``, ``scale=False`` drops ``gamma``.
"""

from __future__ import annotations

from typing import Any

from kiln import te, topi
from kiln.ir.op import Op
from kiln.relax.analysis.struct_info import Fit, dims_fit
from kiln.relax.expr import Call, Expr
from kiln.relax.op.common import (
    as_expr,
    attrs,
    check_arity,
    describe,
    fail,
    normalize_axes,
    normalize_axis,
    require_float,
    same_dtype,
    shape_text,
    tensor_sinfo,
)
from kiln.relax.op.registry import register_op
from kiln.relax.struct_info import StructInfo, TupleStructInfo
from kiln.topi.tag import Pattern


def _check_param(call: Call, i: int, want: tuple[Any, ...] | None, what: str) -> None:
    p = tensor_sinfo(call, i, what)
    dims = p.dims
    if want is None or dims is None:
        return
    if len(dims) != len(want) or any(dims_fit(a, b) is Fit.FAIL for a, b in zip(dims, want)):
        raise fail(
            call,
            f"{what} {describe(call.args[i])} must have shape {shape_text(want)} "
            f"to match data {describe(call.args[0])}",
        )


def _infer_batch_norm(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 5)
    x = tensor_sinfo(call, 0, "data")
    require_float(call, x)
    infos = [tensor_sinfo(call, i) for i in range(5)]
    same_dtype(call, infos)
    want = None
    if x.ndim >= 0:
        ax = normalize_axis(call, call.attrs["axis"], x.ndim)
        want = (x.dims[ax],) if x.dims is not None else None
    for i, what in enumerate(("gamma", "beta", "moving_mean", "moving_var"), start=1):
        _check_param(call, i, want, what)
    return TupleStructInfo((x, infos[3], infos[4]))


def _copy(t: Any) -> Any:
    return te.compute(t.shape, lambda *i: t[i], name=f"{t.name}_copy")


def _legalize_batch_norm(call: Call, args: list[Any]) -> Any:
    a = call.attrs
    x, g, b, mu, var = args
    g = g if a["scale"] else topi.full_like(g, 1.0)
    b = b if a["center"] else topi.full_like(b, 0.0)
    out = topi.nn.batch_norm(x, g, b, mu, var, a["axis"] % len(x.shape), a["epsilon"])
    return [out, _copy(mu), _copy(var)]


@register_op(
    "relax.nn.batch_norm",
    infer=_infer_batch_norm,
    legalize=_legalize_batch_norm,
    pattern=Pattern.OUT_ELEMWISE_FUSABLE,
)
def batch_norm(
    data: Expr,
    gamma: Expr,
    beta: Expr,
    moving_mean: Expr,
    moving_var: Expr,
    axis: int = 1,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
    momentum: float = 0.1,
) -> Call:
    """Inference-mode batch normalization along ``axis``; returns ``(out, mean, var)``."""
    args = tuple(as_expr(v) for v in (data, gamma, beta, moving_mean, moving_var))
    return Call(
        Op.get("relax.nn.batch_norm"),
        args,
        attrs(axis=axis, epsilon=float(epsilon), center=center, scale=scale, momentum=momentum),
    )


def _infer_layer_norm(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 3)
    x = tensor_sinfo(call, 0, "data")
    require_float(call, x)
    same_dtype(call, [tensor_sinfo(call, i) for i in range(3)])
    axes = normalize_axes(call, call.attrs["axes"], x.ndim)
    want = None
    if axes is not None:
        if axes != list(range(x.ndim - len(axes), x.ndim)):
            raise fail(call, f"axes {list(call.attrs['axes'])} must be the trailing axes")
        want = tuple(x.dims[d] for d in axes) if x.dims is not None else None
    _check_param(call, 1, want, "gamma")
    _check_param(call, 2, want, "beta")
    return x


def _legalize_layer_norm(call: Call, args: list[Any]) -> Any:
    a = call.attrs
    x, g, b = args
    return topi.nn.layer_norm(
        x,
        g if a["scale"] else None,
        b if a["center"] else None,
        axis=list(a["axes"]),
        epsilon=a["epsilon"],
    )


@register_op(
    "relax.nn.layer_norm",
    infer=_infer_layer_norm,
    legalize=_legalize_layer_norm,
    pattern=Pattern.OPAQUE,
)
def layer_norm(
    data: Expr,
    gamma: Expr,
    beta: Expr,
    axes: Any = -1,
    epsilon: float = 1e-5,
    center: bool = True,
    scale: bool = True,
) -> Call:
    """``(x - mean) / sqrt(var + epsilon) * gamma + beta`` over the trailing ``axes``."""
    items = (axes,) if isinstance(axes, int) else tuple(axes)
    return Call(
        Op.get("relax.nn.layer_norm"),
        (as_expr(data), as_expr(gamma), as_expr(beta)),
        attrs(axes=items, epsilon=float(epsilon), center=center, scale=scale),
    )
