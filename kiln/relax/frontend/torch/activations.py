"""ATen activations as relax operator records: each is one call (``aten.mish`` is one
``relax.nn.mish``), so profiles and fusion see the operator. `decompositions` keeps these ops,
and the few other ATen operators kiln has one record for (``isfinite``...), whole when torch
decomposes the program to core ATen (`KEPT`); the converters join
`kiln.relax.frontend.torch.aten.ATEN` when this module is imported.
"""

from __future__ import annotations

from typing import Any

from kiln.errors import FrontendError
from kiln.relax import op as R
from kiln.relax.expr import Expr
from kiln.relax.frontend.torch.aten import ATEN, TorchCtx, aten, dims_of

KEPT = ("softplus", "mish", "hardswish", "hardsigmoid", "silu", "elu", "selu", "celu", "prelu",
        "leaky_relu", "hardtanh", "gelu", "isfinite", "isposinf", "isneginf",
        "scaled_dot_product_attention", "reflection_pad1d", "reflection_pad2d",
        "reflection_pad3d", "replication_pad1d", "replication_pad2d",
        "replication_pad3d")  # fmt: skip
"""ATen operators kept whole when the program is decomposed (`decompositions`): torch would
otherwise write ``mish`` as ``exp``/``log1p``/``where``/``tanh``/``mul``, ``isfinite`` as
``abs``/``ne``/``eq``/``mul``, attention as matmuls and a softmax and mirrored padding as
gathers; kiln has one operator record for each (``isfinite``, ``isposinf`` and ``isneginf``
convert in `kiln.relax.frontend.torch.aten`, attention in ``aten_attention``, the paddings in
``aten_nn``)."""


def decompositions() -> Any:
    """torch's core-ATen decomposition table, without the activations in `KEPT`."""
    import torch
    from torch.export import default_decompositions

    table = default_decompositions()
    for name in KEPT:
        op = getattr(torch.ops.aten, name).default
        if op in table:
            del table[op]
    return table


@aten("leaky_relu.default")
def _leaky(ctx: TorchCtx, x: Expr, slope: float = 0.01) -> Expr:
    return ctx.emit(R.nn.leakyrelu(x, slope))


@aten("hardsigmoid.default")
def _hardsigmoid(ctx: TorchCtx, x: Expr) -> Expr:
    return ctx.emit(R.nn.hardsigmoid(x, 1.0 / 6.0, 0.5))


@aten("softplus.default")
def _softplus(ctx: TorchCtx, x: Expr, beta: float = 1.0, threshold: float = 20.0) -> Expr:
    return ctx.emit(R.nn.softplus(x, beta, threshold))


@aten("celu.default")
def _celu(ctx: TorchCtx, x: Expr, alpha: float = 1.0) -> Expr:
    return ctx.emit(R.nn.celu(x, alpha))


@aten("elu.default")
def _elu(ctx: TorchCtx, x: Expr, alpha: float = 1.0, scale: float = 1.0,
         input_scale: float = 1.0) -> Expr:  # fmt: skip
    """``aten.elu``: ``scale * elu(input_scale * x, alpha)``; torch's own uses are ``elu``
    (``scale = 1``) and ``selu`` (``scale = gamma``), both with ``input_scale = 1``."""
    if input_scale != 1:
        raise FrontendError(f"aten.elu with input_scale={input_scale} is not supported")
    return ctx.emit(R.nn.elu(x, alpha) if scale == 1 else R.nn.selu(x, alpha, scale))


@aten("prelu.default")
def _prelu(ctx: TorchCtx, x: Expr, weight: Expr) -> Expr:
    """``weight`` holds one slope or one per channel (dim 1): ``[C, 1, ..., 1]`` broadcasts it."""
    rank = len(dims_of(x))
    if rank > 2:
        weight = ctx.emit(R.reshape(weight, [-1] + [1] * (rank - 2)))
    return ctx.emit(R.nn.prelu(x, weight))


for _name, _fn in (("mish", R.nn.mish), ("hardswish", R.nn.hardswish), ("selu", R.nn.selu)):
    ATEN[f"aten.{_name}.default"] = (lambda fn: lambda ctx, x: ctx.emit(fn(x)))(_fn)


@aten("gelu.default")
def _gelu(ctx: TorchCtx, x: Expr, approximate: str = "none") -> Expr:
    return ctx.emit(R.nn.gelu_tanh(x) if approximate == "tanh" else R.nn.gelu(x))


@aten("hardtanh.default")
def _hardtanh(ctx: TorchCtx, x: Expr, lo: float = -1.0, hi: float = 1.0) -> Expr:
    return ctx.emit(R.clip(x, lo, hi))
