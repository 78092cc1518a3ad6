"""The work of a primitive function: floating-point operations and compulsory bytes.

`function_cost` counts, for a primitive (fused) function whose shapes are all constant:

- FLOPs: a multiply-add counts two. ``matmul`` / ``matmul_packed`` / ``nn.dense``: 2 x outputs x
  the reduced length; ``nn.conv2d`` (any layout, grouped and depthwise too): 2 x output pixels
  (N x H x W) x weight elements, each weight used once per pixel; ``nn.attention``: 2 x rows x
  keys x (query width + value width); pools: outputs x window; every other operator one per
  element of its largest operand or result (element-wise chains, reductions, softmax);
- bytes: what the kernel must move at least: its parameters read once and its result written
  once (scratch that stays in cache is not counted).

A blocked weight padded to whole blocks counts its zeros too (at most one block's worth). With
symbolic shapes a count is a `Size`: an int, or the text of a Python expression over the
symbolic dims' names (``2 * n * 128 * 64``; `kiln.runtime.profile.eval_size` evaluates it with
the dims of a call); a dimension that is not a sum, product or quotient of dims and constants
makes the function's cost unknown (None). `kiln profile` divides these by the measured time
(GFLOP/s, GB/s) and by the machine's bounds (`kiln.runtime.vm.ProfileReport`).
"""

from __future__ import annotations

import math
from typing import Any, Union

from kiln.relax.binding import VarBinding
from kiln.relax.expr import Call, Function, SeqExpr, Tuple
from kiln.relax.struct_info import TensorStructInfo
from kiln.tir import expr as tir

COST = "kiln.cost"
"""The PrimFunc attribute LowerTE records `function_cost` under: ``[flops, bytes]``."""

PRODUCTS = ("relax.matmul", "relax.matmul_packed", "relax.nn.dense")
POOLS = ("relax.nn.max_pool2d", "relax.nn.avg_pool2d")

Size = Union[int, str]
"""A count: an int, or a Python expression over symbolic dims' names (module docstring)."""

_OPS = {tir.Add: "+", tir.Sub: "-", tir.Mul: "*", tir.FloorDiv: "//", tir.FloorMod: "%"}


def size_of(e: Any) -> Size | None:
    """A dimension expression as a `Size` (None: not a sum, product or quotient of dims)."""
    if isinstance(e, tir.IntImm):
        return e.value
    if isinstance(e, tir.Var):
        return e.name if e.name.isidentifier() else None
    op = _OPS.get(type(e))
    if op is None:
        return None
    a, b = size_of(e.a), size_of(e.b)
    if a is None or b is None:
        return None
    return f"({a} {op} {b})"


def _prod(*xs: Size) -> Size:
    ints = [x for x in xs if isinstance(x, int)]
    texts = [x for x in xs if isinstance(x, str)]
    if not texts:
        return math.prod(ints)
    return " * ".join([*texts, *([str(math.prod(ints))] if math.prod(ints) != 1 else [])])


def _sum(xs: list[Size]) -> Size:
    ints = sum(x for x in xs if isinstance(x, int))
    texts = [x for x in xs if isinstance(x, str)]
    if not texts:
        return ints
    return " + ".join([*(f"({t})" for t in texts), *([str(ints)] if ints else [])])


def _dims(e: Any) -> list[Size] | None:
    sinfo = getattr(e, "struct_info_", None)
    if not isinstance(sinfo, TensorStructInfo) or sinfo.dims is None or sinfo.dtype.is_void:
        return None
    dims = [size_of(d) for d in sinfo.dims]
    return None if any(d is None for d in dims) else dims  # type: ignore[return-value]


def _elements(e: Any) -> Size | None:
    dims = _dims(e)
    return None if dims is None else _prod(*dims)


def _operands(call: Call) -> list[Any]:
    out = []
    for a in call.args:
        out.extend(a.fields if isinstance(a, Tuple) else [a])
    return out


def call_flops(call: Call) -> Size | None:
    """The FLOPs of one operator call (module docstring), None when a shape is unknown."""
    name = getattr(call.op, "name", "")
    out = _dims(call)
    if out is None:
        return None
    outputs = _prod(*out)
    if name in PRODUCTS:
        x = _dims(call.args[0])
        return None if x is None else _prod(2, outputs, x[-1])
    if name == "relax.nn.conv2d":
        w = _elements(call.args[1])
        return None if w is None else _prod(2, out[0], out[2], out[3], w)
    if name == "relax.nn.attention":
        q, k = _dims(call.args[0]), _dims(call.args[1])
        if q is None or k is None:
            return None
        return _prod(2, *q[:-1], k[-2], _sum([q[-1], out[-1]]))
    if name in POOLS:
        return _prod(outputs, math.prod(call.attrs["pool_size"]))
    sizes = [s for s in (_elements(a) for a in _operands(call)) if s is not None]
    if all(isinstance(s, int) for s in (outputs, *sizes)):
        return max([outputs, *sizes])  # type: ignore[type-var]
    return f"max({', '.join(str(s) for s in dict.fromkeys([outputs, *sizes]))})"


def function_cost(func: Function) -> tuple[Size, Size] | None:
    """``(flops, bytes)`` of a primitive function (module docstring), or None."""
    body = func.body
    if not isinstance(body, SeqExpr):
        return None
    flops: list[Size] = []
    for block in body.blocks:
        for b in block.bindings:
            if not isinstance(b, VarBinding) or not isinstance(b.value, Call):
                continue
            n = call_flops(b.value)
            if n is None:
                return None
            flops.append(n)
    moved: list[Size] = []
    results = body.body.fields if isinstance(body.body, Tuple) else (body.body,)
    for t in (*func.params, *results):
        elements = _elements(t)
        if elements is None:
            return None
        moved.append(_prod(elements, t.struct_info_.dtype.itemsize))  # type: ignore[union-attr]
    return _sum(flops), _sum(moved)
