"""Image operators: ``relax.image.resize`` (nearest / linear resampling of any axes, ONNX's
coordinate modes; constant shapes). Pattern: ``INJECTIVE``."""

from __future__ import annotations

from typing import Any

from kiln.ir.op import Op
from kiln.relax.expr import Call, Expr
from kiln.relax.op.common import as_expr, attrs, check_arity, fail, out_tensor, tensor_sinfo
from kiln.relax.op.registry import register_op
from kiln.relax.struct_info import StructInfo
from kiln.topi.image import resize as te_resize
from kiln.topi.tag import Pattern


def _infer_resize(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 1)
    x = tensor_sinfo(call, 0, "data")
    size = call.attrs["size"]
    if x.ndim >= 0 and len(size) != x.ndim:
        raise fail(call, f"size {list(size)} must give every one of the {x.ndim} axes")
    if len(call.attrs["scales"]) != len(size):
        raise fail(call, "scales and size must have the same length")
    return out_tensor(list(size), x.dtype)


def _legalize_resize(call: Call, args: list[Any]) -> Any:

    a = call.attrs
    return te_resize(
        args[0],
        list(a["size"]),
        list(a["scales"]),
        a["mode"],
        a["coord_mode"],
        a["nearest_mode"],
        list(a["roi"]) if a["roi"] else None,
        a["extrapolation_value"],
    )


@register_op(
    "relax.image.resize", infer=_infer_resize, legalize=_legalize_resize, pattern=Pattern.INJECTIVE
)
def resize(
    data: Expr,
    size: Any,
    scales: Any,
    mode: str = "nearest",
    coord_mode: str = "half_pixel",
    nearest_mode: str = "round_prefer_floor",
    roi: Any = None,
    extrapolation_value: float = 0.0,
) -> Call:
    """``data`` resampled to ``size`` (``scales`` per axis drive the coordinate mapping)."""
    return Call(
        Op.get("relax.image.resize"),
        (as_expr(data),),
        attrs(
            size=tuple(int(s) for s in size),
            scales=tuple(float(s) for s in scales),
            mode=mode,
            coord_mode=coord_mode,
            nearest_mode=nearest_mode,
            roi=tuple(float(r) for r in roi) if roi is not None else None,
            extrapolation_value=float(extrapolation_value),
        ),
    )
