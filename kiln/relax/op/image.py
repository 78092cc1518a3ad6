"""Image operators: ``relax.image.resize`` (nearest / linear resampling of any axes, ONNX's
coordinate modes) and ``relax.image.grid_sample`` (torch's ``grid_sample``: an image read at
the points of a grid); constant shapes. Pattern: ``INJECTIVE``."""

from __future__ import annotations

from typing import Any

from kiln.ir.op import Op
from kiln.relax.expr import Call, Expr
from kiln.relax.op.common import (
    as_expr,
    attrs,
    check_arity,
    describe,
    fail,
    out_tensor,
    same_dtype,
    tensor_sinfo,
)
from kiln.relax.op.registry import register_op
from kiln.relax.struct_info import StructInfo
from kiln.topi.image import grid_sample as te_grid_sample
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


def _infer_grid_sample(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 2)
    x = tensor_sinfo(call, 0, "data")
    grid = tensor_sinfo(call, 1, "the grid")
    dtype = same_dtype(call, [x, grid])
    if x.ndim not in (-1, 4) or grid.ndim not in (-1, 4):
        shown = f"{describe(call.args[0])} and {describe(call.args[1])}"
        raise fail(call, f"needs 4-D data [N, C, H, W] and grid [N, Ho, Wo, 2], got {shown}")
    if x.dims is None or grid.dims is None:
        return out_tensor(None, dtype, 4)
    return out_tensor([x.dims[0], x.dims[1], grid.dims[1], grid.dims[2]], dtype)


def _legalize_grid_sample(call: Call, args: list[Any]) -> Any:
    a = call.attrs
    return te_grid_sample(args[0], args[1], a["method"], a["padding_mode"], a["align_corners"])


@register_op(
    "relax.image.grid_sample",
    infer=_infer_grid_sample,
    legalize=_legalize_grid_sample,
    pattern=Pattern.INJECTIVE,
)
def grid_sample(
    data: Expr,
    grid: Expr,
    method: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool = False,
) -> Call:
    """``data`` ``[N, C, H, W]`` sampled at the normalized points of ``grid`` ``[N, Ho, Wo,
    2]`` (`kiln.topi.image.grid_sample` says how)."""
    return Call(
        Op.get("relax.image.grid_sample"),
        (as_expr(data), as_expr(grid)),
        attrs(method=method, padding_mode=padding_mode, align_corners=bool(align_corners)),
    )
