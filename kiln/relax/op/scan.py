"""Running reductions: ``relax.cumsum`` and ``relax.cumprod`` along one axis (``exclusive``:
each element leaves itself out; ``reverse``: from the end). Pattern: ``OPAQUE``."""

from __future__ import annotations

from typing import Any

from kiln.ir.op import Op
from kiln.relax.expr import Call, Expr
from kiln.relax.op.common import as_expr, attrs, check_arity, normalize_axis, tensor_sinfo
from kiln.relax.op.registry import register_op
from kiln.relax.struct_info import StructInfo
from kiln.topi import scan
from kiln.topi.tag import Pattern


def _infer(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 1)
    x = tensor_sinfo(call, 0, "data")
    if x.ndim >= 0:
        normalize_axis(call, call.attrs["axis"], x.ndim)
    return x


def _make(name: str, doc: str) -> Any:
    full = f"relax.{name}"

    def legalize(call: Call, args: list[Any]) -> Any:

        a = call.attrs
        return getattr(scan, name)(args[0], a["axis"], a["exclusive"], a["reverse"])

    def builder(data: Expr, axis: int = 0, exclusive: bool = False, reverse: bool = False) -> Call:
        return Call(
            Op.get(full),
            (as_expr(data),),
            attrs(axis=int(axis), exclusive=bool(exclusive), reverse=bool(reverse)),
        )

    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = doc
    register_op(full, infer=_infer, legalize=legalize, pattern=Pattern.OPAQUE)(builder)
    return builder


cumsum = _make("cumsum", "The running sum of ``data`` along ``axis``.")
cumprod = _make("cumprod", "The running product of ``data`` along ``axis``.")
