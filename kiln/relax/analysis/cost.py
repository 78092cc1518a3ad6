"""The work of a primitive function: floating-point operations and compulsory bytes.

`function_cost` counts, for a primitive (fused) function whose shapes are all constant:

- FLOPs: a multiply-add counts two. ``matmul`` / ``matmul_packed`` / ``nn.dense``: 2 x outputs x
  the reduced length; ``nn.conv2d`` (any layout, grouped and depthwise too): 2 x output pixels
  (N x H x W) x weight elements, each weight used once per pixel; ``nn.attention``: 2 x rows x
  keys x (query width + value width); pools: outputs x window; every other operator one per
  element of its largest operand or result (element-wise chains, reductions, softmax);
- bytes: what the kernel must move at least: its parameters read once and its result written
  once (scratch that stays in cache is not counted).

A blocked weight padded to whole blocks counts its zeros too (at most one block's worth). A
function with a symbolic shape has no cost here (None). `kiln profile` divides these by the
measured time (GFLOP/s, GB/s) and by the machine's bounds (`kiln.runtime.vm.ProfileReport`).
"""

from __future__ import annotations

import math
from typing import Any

from kiln.relax.analysis.struct_info import static_dims
from kiln.relax.binding import VarBinding
from kiln.relax.expr import Call, Function, SeqExpr, Tuple

COST = "kiln.cost"
"""The PrimFunc attribute LowerTE records `function_cost` under: ``[flops, bytes]``."""

PRODUCTS = ("relax.matmul", "relax.matmul_packed", "relax.nn.dense")
POOLS = ("relax.nn.max_pool2d", "relax.nn.avg_pool2d")


def _elements(e: Any) -> int | None:
    dims = static_dims(e)
    return None if dims is None else math.prod(dims)


def _operands(call: Call) -> list[Any]:
    out = []
    for a in call.args:
        out.extend(a.fields if isinstance(a, Tuple) else [a])
    return out


def call_flops(call: Call) -> int | None:
    """The FLOPs of one operator call (module docstring), None when a shape is symbolic."""
    name = getattr(call.op, "name", "")
    out = static_dims(call)
    sizes = [_elements(a) for a in _operands(call) if static_dims(a) is not None]
    if out is None:
        return None
    outputs = math.prod(out)
    if name in PRODUCTS:
        x = static_dims(call.args[0])
        return None if x is None else 2 * outputs * x[-1]
    if name == "relax.nn.conv2d":
        w = _elements(call.args[1])
        return None if w is None else 2 * out[0] * out[2] * out[3] * w
    if name == "relax.nn.attention":
        q, k = static_dims(call.args[0]), static_dims(call.args[1])
        if q is None or k is None:
            return None
        return 2 * math.prod(q[:-1]) * k[-2] * (q[-1] + out[-1])
    if name in POOLS:
        return outputs * math.prod(call.attrs["pool_size"])
    return max([outputs, *(s for s in sizes if s is not None)])


def function_cost(func: Function) -> tuple[int, int] | None:
    """``(flops, bytes)`` of a primitive function (module docstring), or None."""
    body = func.body
    if not isinstance(body, SeqExpr):
        return None
    flops = 0
    for block in body.blocks:
        for b in block.bindings:
            if not isinstance(b, VarBinding) or not isinstance(b.value, Call):
                continue
            n = call_flops(b.value)
            if n is None:
                return None
            flops += n
    moved = 0
    results = body.body.fields if isinstance(body.body, Tuple) else (body.body,)
    for t in (*func.params, *results):
        dims = static_dims(t)
        if dims is None:
            return None
        moved += math.prod(dims) * t.struct_info_.dtype.itemsize  # type: ignore[union-attr]
    return flops, moved
