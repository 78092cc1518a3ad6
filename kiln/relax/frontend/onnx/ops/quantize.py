"""``QuantizeLinear`` / ``DequantizeLinear`` with per-tensor or per-axis scales (8/16-bit
integer types; block quantization and float8 / 4-bit types are not supported)."""

from __future__ import annotations

from typing import Any

import numpy as np

from kiln.errors import FrontendError
from kiln.relax import op as R
from kiln.relax.expr import Expr
from kiln.relax.frontend.onnx import values as V
from kiln.relax.frontend.onnx.ops import Ctx, Node, converter, dtype, ndim
from kiln.relax.frontend.onnx.ops.elementwise import scalar


def _along(ctx: Ctx, node: Node, v: Expr, x: Expr) -> Expr:
    """A per-axis (1-D) scale or zero point shaped to broadcast along ``axis`` of ``x``."""
    if node.attrs.get("block_size", 0):
        raise FrontendError("blocked quantization (block_size) is not supported")
    if ndim(v) != 1 or ndim(x) <= 1:
        return v
    axis = node.attrs.get("axis", 1) % ndim(x)
    shape = [1] * ndim(x)
    shape[axis] = -1
    return ctx.emit(R.reshape(v, shape))


def _zero_point(ctx: Ctx, ins: list[Any], default: str) -> Expr:
    if len(ins) > 2 and ins[2] is not None:
        return ctx.tensor(ins, 2)
    return ctx.expr(np.zeros((), default))


@converter("DequantizeLinear")
def _dequantize(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x, scale = ctx.tensor(ins, 0), ctx.tensor(ins, 1)
    zp = _zero_point(ctx, ins, dtype(x))
    out_dt = dtype(scale)
    xf = ctx.emit(R.astype(x, "float32"))
    zf = ctx.emit(R.astype(_along(ctx, node, zp, x), "float32"))
    sf = ctx.emit(R.astype(_along(ctx, node, scale, x), "float32"))
    y = ctx.emit(R.multiply(R.subtract(xf, zf), sf))
    return y if out_dt == "float32" else ctx.emit(R.astype(y, out_dt))


@converter("QuantizeLinear")
def _quantize(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x, scale = ctx.tensor(ins, 0), ctx.tensor(ins, 1)
    to = node.attrs.get("output_dtype")
    default = V.onnx_dtype(to, "QuantizeLinear") if to else "uint8"
    zp = _zero_point(ctx, ins, default)
    qdt = dtype(zp)
    if qdt not in ("uint8", "int8", "uint16", "int16"):
        raise FrontendError(f"QuantizeLinear to {qdt} is not supported")
    info = np.iinfo(qdt)
    xf = ctx.emit(R.astype(x, "float32"))
    sf = ctx.emit(R.astype(_along(ctx, node, scale, x), "float32"))
    zf = ctx.emit(R.astype(_along(ctx, node, zp, x), "float32"))
    q = ctx.emit(R.add(R.round(R.divide(xf, sf)), zf))
    lo, hi = scalar(float(info.min), q), scalar(float(info.max), q)
    return ctx.emit(R.astype(R.minimum(R.maximum(q, lo), hi), qdt))
