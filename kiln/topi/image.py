"""Image resampling: `resize` (nearest and linear, any axes, ONNX's coordinate modes) and
`grid_sample` (torch's sampling of an image at the points of a grid).

Every axis is resampled independently: output index ``i`` maps to a coordinate ``x`` of the
input by the coordinate transformation mode (``half_pixel``, ``pytorch_half_pixel``,
``half_pixel_symmetric``, ``align_corners``, ``asymmetric``, ``tf_crop_and_resize``), then
``nearest`` picks one input index (by ``nearest_mode``) and ``linear`` blends the two
neighbours (indices clamped to the edge). An axis whose extent and scale are unchanged is
copied. Shapes must be constants.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product
from typing import Any

from kiln import te
from kiln.errors import IRValueError
from kiln.tir import op as tir_op
from kiln.tir.expr import Cast, FloatImm, IntImm, Max, Min, PrimExpr, Select
from kiln.topi import tag

F32 = "float32"


def _f(v: float) -> PrimExpr:
    return FloatImm(F32, float(v))


def _coord(i: PrimExpr, n_in: int, n_out: int, scale: float, mode: str, roi: Any) -> PrimExpr:
    """The input coordinate of output index ``i`` on one axis."""
    fi = Cast(F32, i)
    if mode == "half_pixel":
        return (fi + _f(0.5)) / _f(scale) - _f(0.5)
    if mode == "pytorch_half_pixel":
        return (fi + _f(0.5)) / _f(scale) - _f(0.5) if n_out > 1 else _f(0.0)
    if mode == "half_pixel_symmetric":
        adj = n_out / (scale * n_in)
        offset = n_in / 2 * (1 - adj)
        return _f(offset) + (fi + _f(0.5)) / _f(scale) - _f(0.5)
    if mode == "align_corners":
        return fi * _f((n_in - 1) / (n_out - 1)) if n_out > 1 else _f(0.0)
    if mode == "asymmetric":
        return fi / _f(scale)
    if mode == "tf_crop_and_resize":
        start, end = roi
        if n_out > 1:
            return _f(start * (n_in - 1)) + fi * _f((end - start) * (n_in - 1) / (n_out - 1))
        return _f(0.5 * (start + end) * (n_in - 1))
    raise IRValueError(f"resize: coordinate mode {mode!r} is not supported")


def _nearest(x: PrimExpr, rounding: str) -> PrimExpr:
    if rounding == "round_prefer_floor":
        return tir_op.math("ceil", x - _f(0.5))
    if rounding == "round_prefer_ceil":
        return tir_op.math("floor", x + _f(0.5))
    if rounding in ("floor", "ceil"):
        return tir_op.math(rounding, x)
    raise IRValueError(f"resize: nearest mode {rounding!r} is not supported")


def _clamp(v: PrimExpr, n: int, dt: str) -> PrimExpr:
    return Min(Max(Cast(dt, v), IntImm(dt, 0)), IntImm(dt, n - 1))


def resize(
    x: te.Tensor,
    size: Sequence[int],
    scales: Sequence[float],
    mode: str = "nearest",
    coord_mode: str = "half_pixel",
    nearest_mode: str = "round_prefer_floor",
    roi: Sequence[float] | None = None,
    extrapolation_value: float = 0.0,
) -> te.Tensor:
    """``x`` resampled to ``size`` (see the module docstring)."""
    if not all(isinstance(d, IntImm) for d in x.shape):
        raise IRValueError(f"resize: tensor {x.name!r} needs a constant shape, got {x.shape}")
    shape = [d.value for d in x.shape]
    rank = len(shape)
    moving = [a for a in range(rank) if size[a] != shape[a] or scales[a] != 1.0]
    boxes = [(roi[a], roi[a + rank]) if roi else (0.0, 1.0) for a in range(rank)]
    if mode not in ("nearest", "linear"):
        raise IRValueError(f"resize: mode {mode!r} is not supported (nearest, linear)")

    def body(*i: PrimExpr) -> PrimExpr:
        dt = str(i[0].dtype)
        coords = {a: _coord(i[a], shape[a], size[a], scales[a], coord_mode, boxes[a])
                  for a in moving}  # fmt: skip
        if mode == "nearest":
            idx = list(i)
            for a in moving:
                idx[a] = _clamp(_nearest(coords[a], nearest_mode), shape[a], dt)
            value = x[tuple(idx)]
        else:
            value = _linear(x, i, moving, coords, shape, dt)
        if coord_mode != "tf_crop_and_resize":
            return value
        out = None
        for a in moving:
            bad = (coords[a] < _f(0.0)) | (coords[a] > _f(shape[a] - 1))
            out = bad if out is None else out | bad
        fill = Cast(x.dtype, _f(extrapolation_value))
        return value if out is None else Select(out, fill, value)

    return te.compute(
        tuple(size), body, name="T_resize", tag=tag.INJECTIVE, attrs=tag.attrs_for(tag.INJECTIVE)
    )


def _linear(x: te.Tensor, i: Sequence[PrimExpr], moving: list[int], coords: dict, shape: list,
            dt: str) -> PrimExpr:  # fmt: skip
    """The blend of the 2^k neighbours of a point (k resampled axes)."""
    floors = {a: tir_op.math("floor", coords[a]) for a in moving}
    total = None
    for corner in product((0, 1), repeat=len(moving)):
        idx = list(i)
        weight: PrimExpr = _f(1.0)
        for a, c in zip(moving, corner):
            frac = coords[a] - floors[a]
            weight = weight * (frac if c else _f(1.0) - frac)
            idx[a] = _clamp(floors[a] + _f(float(c)), shape[a], dt)
        v = x[tuple(idx)]
        term = weight * (v if str(v.dtype) == F32 else Cast(F32, v))
        total = term if total is None else total + term
    assert total is not None
    return total if str(x.dtype) == F32 else Cast(x.dtype, total)


GRID_MODES = ("bilinear", "nearest")
GRID_PADDING = ("zeros", "border", "reflection")


def _reflect(c: PrimExpr, lo2: int, hi2: int) -> PrimExpr:
    """``c`` reflected into ``[lo2 / 2, hi2 / 2]`` (bounds given doubled, as they are halves)."""
    if lo2 == hi2:
        return _f(0.0)
    lo, span = lo2 / 2, (hi2 - lo2) / 2
    d = tir_op.math("fabs", c - _f(lo))
    extra = tir_op.math("fmod", d, _f(span))
    flips = Cast("int64", tir_op.math("floor", d / _f(span)))
    even = (flips % IntImm("int64", 2)).eq(IntImm("int64", 0))
    return Select(even, extra + _f(lo), _f(span) - extra + _f(lo))


def _grid_coord(g: PrimExpr, n: int, padding: str, align: bool) -> PrimExpr:
    """The input coordinate of normalized grid value ``g`` (``-1..1``) on an axis of ``n``."""
    one = _f(1.0)
    c = (g + one) / _f(2.0) * _f(n - 1) if align else ((g + one) * _f(n) - one) / _f(2.0)
    if padding == "reflection":
        c = _reflect(c, 0, 2 * (n - 1)) if align else _reflect(c, -1, 2 * n - 1)
    if padding in ("border", "reflection"):
        c = Min(Max(c, _f(0.0)), _f(n - 1))
    return c


def grid_sample(x: te.Tensor, grid: te.Tensor, mode: str = "bilinear", padding: str = "zeros",
                align_corners: bool = False) -> te.Tensor:  # fmt: skip
    """``torch.nn.functional.grid_sample`` of a 4-D ``x`` ``[N, C, H, W]``: output
    ``[N, C, Ho, Wo]`` samples ``x`` at ``grid[n, i, j] = (x, y)`` (normalized to ``-1..1``;
    ``align_corners``: -1 and 1 are the centres of the corner pixels, else their outer edges),
    bilinearly or at the nearest pixel (halves to even); taps outside the image read 0
    (``"zeros"``), the edge (``"border"``) or the image mirrored (``"reflection"``)."""
    if mode not in GRID_MODES or padding not in GRID_PADDING:
        raise IRValueError(
            f"grid_sample: mode must be one of {GRID_MODES} and padding one of {GRID_PADDING}, "
            f"got {mode!r} and {padding!r}"
        )
    if not all(isinstance(d, IntImm) for d in (*x.shape, *grid.shape)) or len(x.shape) != 4:
        raise IRValueError(
            f"grid_sample: needs a 4-D input and a grid of constant shapes, got {x.shape} and "
            f"{grid.shape}"
        )
    n, c, h, w = (d.value for d in x.shape)
    _, ho, wo, _ = (d.value for d in grid.shape)

    def tap(b: PrimExpr, ch: PrimExpr, yy: PrimExpr, xx: PrimExpr) -> PrimExpr:
        dt = str(b.dtype)
        yi, xi = Cast(dt, yy), Cast(dt, xx)
        inside = (yi >= IntImm(dt, 0)) & (yi < IntImm(dt, h)) & (xi >= IntImm(dt, 0))
        inside = inside & (xi < IntImm(dt, w))
        read = x[b, ch, _clamp(yy, h, dt), _clamp(xx, w, dt)]
        read = read if str(read.dtype) == F32 else Cast(F32, read)
        return Select(inside, read, _f(0.0))

    def body(b: PrimExpr, ch: PrimExpr, i: PrimExpr, j: PrimExpr) -> PrimExpr:
        gx, gy = (grid[b, i, j, IntImm(str(b.dtype), k)] for k in (0, 1))
        gx, gy = (g if str(g.dtype) == F32 else Cast(F32, g) for g in (gx, gy))
        cx = _grid_coord(gx, w, padding, align_corners)
        cy = _grid_coord(gy, h, padding, align_corners)
        if mode == "nearest":
            out = tap(b, ch, tir_op.math("nearbyint", cy), tir_op.math("nearbyint", cx))
        else:
            x0, y0 = tir_op.math("floor", cx), tir_op.math("floor", cy)
            fx, fy = cx - x0, cy - y0
            out = None
            for dy, wy in ((0.0, _f(1.0) - fy), (1.0, fy)):
                for dx, wx in ((0.0, _f(1.0) - fx), (1.0, fx)):
                    term = wy * wx * tap(b, ch, y0 + _f(dy), x0 + _f(dx))
                    out = term if out is None else out + term
        return out if str(x.dtype) == F32 else Cast(x.dtype, out)

    return te.compute(
        (n, c, ho, wo), body, name="T_grid_sample", tag=tag.INJECTIVE,
        attrs=tag.attrs_for(tag.INJECTIVE),
    )  # fmt: skip
