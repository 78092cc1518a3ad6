"""2-D convolution in NCHW layout as tensor expressions: `conv2d_nchw`, depthwise included.

``out[n, o, y, x] = sum_{c, r, s} pad(data)[n, g * C_g + c, y * sh + r * dh, x * sw + s * dw] *
kernel[o, c, r, s]``, where ``g = o // O_g`` is the group of output channel ``o`` (``C_g`` input
and ``O_g`` output channels per group). ``groups == in_channels == out_channels`` is a depthwise
convolution. This is the target-independent definition; `kiln.topi.x86.conv2d` computes the same
values through padded stages its schedule turns into a register-blocked kernel.

Errors name the operator and the tensor: ``conv2d_nchw: data 'x' has 6 channels, which groups=4
does not divide``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kiln import te
from kiln.errors import IRError, IRValueError
from kiln.te import Tensor
from kiln.tir.expr import PrimExpr, convert
from kiln.topi.tag import Pattern, attrs_for
from kiln.topi.utils import check_numeric, check_tensor, const_int, show_shape

CONV2D = "conv2d_nchw"
"""Tag of the convolution compute (pattern ``OUT_ELEMWISE_FUSABLE``)."""


@dataclass(frozen=True)
class ConvDims:
    """Sizes of a 2-D convolution: batch, channels, input and output extents, window, stride,
    dilation, padding ``(top, left, bottom, right)`` and groups; all constant ints."""

    n: int
    c: int
    h: int
    w: int
    o: int
    kh: int
    kw: int
    oh: int
    ow: int
    stride: tuple[int, int]
    dilation: tuple[int, int]
    pad: tuple[int, int, int, int]
    groups: int

    @property
    def c_per_group(self) -> int:
        return self.c // self.groups

    @property
    def o_per_group(self) -> int:
        return self.o // self.groups


def _pair(op: str, name: str, value: Any, minimum: int) -> tuple[int, int]:
    items = (value, value) if isinstance(value, int) else tuple(value)
    if len(items) != 2 or any(isinstance(v, bool) or not isinstance(v, int) for v in items):
        raise IRError(f"{op}: {name} must be an int or a pair of ints, got {value!r}")
    if any(v < minimum for v in items):
        raise IRValueError(f"{op}: {name} must be at least {minimum}, got {value!r}")
    return items[0], items[1]


def _padding(op: str, value: Any) -> tuple[int, int, int, int]:
    if isinstance(value, (list, tuple)) and len(value) == 4:
        if all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
            return tuple(value)  # type: ignore[return-value]
        raise IRValueError(f"{op}: padding must hold non-negative ints, got {value!r}")
    ph, pw = _pair(op, "padding", value, 0)
    return ph, pw, ph, pw


def _shape(op: str, t: Tensor, what: str) -> tuple[int, int, int, int]:
    if t.ndim != 4:
        raise IRValueError(
            f"{op}: {what} {t.name!r} must be 4-D (NCHW / OIHW), got {show_shape(t)}"
        )
    dims = [const_int(d) for d in t.shape]
    if any(d is None for d in dims):
        raise IRValueError(f"{op}: {what} {t.name!r} needs a constant shape, got {show_shape(t)}")
    return tuple(d for d in dims if d is not None)  # type: ignore[return-value]


def conv_dims(
    op: str, data: Any, kernel: Any, stride: Any, padding: Any, dilation: Any, groups: Any
) -> ConvDims:
    """Check the operands and parameters of a convolution and return its sizes."""
    data = check_tensor(op, data, "data")
    kernel = check_tensor(op, kernel, "kernel")
    n, c, h, w = _shape(op, data, "data")
    o, cg, kh, kw = _shape(op, kernel, "kernel")
    for t in (data, kernel):
        check_numeric(op, t)
    if data.dtype != kernel.dtype:
        raise IRError(
            f"{op}: data {data.name!r} ({data.dtype}) and kernel {kernel.name!r} "
            f"({kernel.dtype}) have different dtypes"
        )
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise IRError(f"{op}: groups must be a positive int, got {groups!r}")
    if c % groups:
        raise IRValueError(
            f"{op}: data {data.name!r} has {c} channels, which groups={groups} does not divide"
        )
    if o % groups:
        raise IRValueError(
            f"{op}: kernel {kernel.name!r} has {o} output channels, which groups={groups} "
            "does not divide"
        )
    if cg != c // groups:
        raise IRValueError(
            f"{op}: kernel {kernel.name!r} {show_shape(kernel)} expects {cg} input channels per "
            f"group, but data {data.name!r} {show_shape(data)} has {c} channels in {groups} "
            f"group(s) ({c // groups} per group)"
        )
    sh, sw = _pair(op, "stride", stride, 1)
    dh, dw = _pair(op, "dilation", dilation, 1)
    pad = _padding(op, padding)
    oh = (h + pad[0] + pad[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (w + pad[1] + pad[3] - dw * (kw - 1) - 1) // sw + 1
    if oh < 1 or ow < 1:
        raise IRValueError(
            f"{op}: the {kh}x{kw} kernel {kernel.name!r} (dilation {dh}x{dw}) does not fit the "
            f"padded {h}x{w} input {data.name!r}; the output would be {oh}x{ow}"
        )
    return ConvDims(n, c, h, w, o, kh, kw, oh, ow, (sh, sw), (dh, dw), pad, groups)


def pad_nchw(data: Tensor, d: ConvDims, height: int, width: int, name: str) -> Tensor:
    """``data`` zero-padded to ``height x width`` (``d.pad`` top and left, the rest bottom and
    right); marked ``no_inline`` so schedules compute it once."""
    top, left = d.pad[0], d.pad[1]
    zero = convert(0.0, data.dtype) if data.dtype.is_float else convert(0, data.dtype)

    def body(n: Any, c: Any, y: Any, x: Any) -> Any:
        inside = te_and(y >= top, y < top + d.h, x >= left, x < left + d.w)
        return te.if_then_else(inside, data[n, c, y - top, x - left], zero)

    attrs = attrs_for("injective", Pattern.INJECTIVE, no_inline=True)
    return te.compute((d.n, d.c, height, width), body, name=name, tag="pad", attrs=attrs)


def te_and(*conds: PrimExpr) -> PrimExpr:
    """The conjunction of boolean expressions."""
    out = conds[0]
    for c in conds[1:]:
        out = out & c
    return out


def conv2d_nchw(
    data: Any,
    kernel: Any,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    name: str = "conv2d_nchw",
) -> Tensor:
    """2-D convolution of NCHW ``data`` with an OIHW ``kernel`` (see module docstring);
    ``padding`` is an int, ``(pad_h, pad_w)`` or ``(top, left, bottom, right)``."""
    d = conv_dims(CONV2D, data, kernel, stride, padding, dilation, groups)
    padded = any(d.pad)
    src = data
    if padded:
        src = pad_nchw(data, d, d.h + d.pad[0] + d.pad[2], d.w + d.pad[1] + d.pad[3], f"{name}_pad")
    rc = te.reduce_axis((0, d.c_per_group), name="rc")
    ry = te.reduce_axis((0, d.kh), name="ry")
    rx = te.reduce_axis((0, d.kw), name="rx")
    (sh, sw), (dh, dw) = d.stride, d.dilation

    def body(n: Any, o: Any, y: Any, x: Any) -> Any:
        c = rc if d.groups == 1 else (o // d.o_per_group) * d.c_per_group + rc
        value = src[n, c, y * sh + ry * dh, x * sw + rx * dw] * kernel[o, rc, ry, rx]
        return te.sum(value, axis=[rc, ry, rx])

    attrs = attrs_for(
        CONV2D,
        Pattern.OUT_ELEMWISE_FUSABLE,
        stride=d.stride,
        padding=d.pad,
        dilation=d.dilation,
        groups=d.groups,
    )
    return te.compute((d.n, d.o, d.oh, d.ow), body, name=name, tag=CONV2D, attrs=attrs)
