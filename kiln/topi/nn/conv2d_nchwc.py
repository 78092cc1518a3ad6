"""2-D convolution over channel-blocked tensors: `conv2d_nchwc` (``NCHW{cb}c`` data,
``OIHW{ki}i{ob}o`` filters, ``NCHW{ob}c`` output), grouped and depthwise included.

The values are those of `kiln.topi.nn.conv2d.conv2d_nchw` on the unblocked tensors
(`kiln.topi.layout`): output channel ``o = oc * ob + oi`` of group ``g = o // O_g`` reads input
channels ``c = g * C_g + r`` (``r < C_g``), which sit at ``data[n, c // cb, y, x, c % cb]``, and
filter tap ``kernel[oc, r // ki, ky, kx, r % ki, oi]``. Any blocks fit this definition (a
depthwise convolution, ``groups == C == O``, has ``ki == 1``); the CPU kernels ask more.

This is the target-independent definition (batch and spatial extents may be symbolic, padding
is read as zeros in the body); `kiln.topi.x86.conv2d_nchwc` computes the same values through
padded stages its schedule turns into a register-tiled kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kiln import te
from kiln.errors import IRError, IRValueError
from kiln.te import Tensor
from kiln.tir.expr import PrimExpr, convert
from kiln.topi.nn.conv2d import ConvDims, _padding, _pair
from kiln.topi.tag import Pattern, attrs_for
from kiln.topi.utils import check_numeric, check_tensor, const_int, show_shape

CONV2D_NCHWC = "conv2d_nchwc"
"""Tag of the blocked convolution's compute (pattern ``OUT_ELEMWISE_FUSABLE``)."""


@dataclass(frozen=True)
class BlockedConv:
    """A blocked convolution's sizes: the unblocked `ConvDims` (batch and spatial extents may
    be symbolic expressions) and the blocks ``cb`` (data), ``ki`` (filter inputs), ``ob``
    (filter outputs, and the output's)."""

    dims: ConvDims
    cb: int
    ki: int
    ob: int

    @property
    def depthwise(self) -> bool:
        d = self.dims
        return d.c_per_group == 1 and d.o_per_group == 1

    @property
    def layouts(self) -> tuple[str, str, str]:
        """(data, kernel, output) layout names."""
        return f"NCHW{self.cb}c", f"OIHW{self.ki}i{self.ob}o", f"NCHW{self.ob}c"


def _extent(size: Any, k: int, s: int, lo: int, hi: int, d: int) -> Any:
    n = const_int(size)
    if n is not None:
        return (n + lo + hi - d * (k - 1) - 1) // s + 1
    return (size + (lo + hi - d * (k - 1) - 1)) // s + 1


def _const(op: str, t: Tensor, axes: range) -> list[int]:
    dims = [const_int(t.shape[i]) for i in axes]
    if any(v is None for v in dims):
        raise IRValueError(f"{op}: tensor {t.name!r} {show_shape(t)} needs constant channels")
    return [v for v in dims if v is not None]


def blocked_conv(
    op: str, data: Any, kernel: Any, stride: Any, padding: Any, dilation: Any, groups: Any
) -> BlockedConv:
    """Check a blocked convolution's operands and parameters; returns its sizes."""
    data, kernel = check_tensor(op, data, "data"), check_tensor(op, kernel, "kernel")
    if data.ndim != 5 or kernel.ndim != 6:
        raise IRValueError(
            f"{op}: data {data.name!r} {show_shape(data)} must be 5-D (NCHWc) and kernel "
            f"{kernel.name!r} {show_shape(kernel)} 6-D (OIHWio)"
        )
    for t in (data, kernel):
        check_numeric(op, t)
    if data.dtype != kernel.dtype:
        raise IRError(f"{op}: data and kernel have different dtypes ({data.dtype}, {kernel.dtype})")
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise IRError(f"{op}: groups must be a positive int, got {groups!r}")
    c_out, cb = _const(op, data, range(1, 5, 3))
    o_out, i_out, kh, kw, ki, ob = _const(op, kernel, range(6))
    c, o, cg = c_out * cb, o_out * ob, i_out * ki
    if c % groups or o % groups or cg * groups != c:
        raise IRValueError(
            f"{op}: data {data.name!r} {show_shape(data)} ({c} channels in blocks of {cb}) and "
            f"kernel {kernel.name!r} {show_shape(kernel)} ({o} outputs in blocks of {ob}, {cg} "
            f"inputs per group in blocks of {ki}) do not fit groups={groups}"
        )
    sh, sw = _pair(op, "stride", stride, 1)
    dh, dw = _pair(op, "dilation", dilation, 1)
    pad = _padding(op, padding)
    n, h, w = data.shape[0], data.shape[2], data.shape[3]
    oh = _extent(h, kh, sh, pad[0], pad[2], dh)
    ow = _extent(w, kw, sw, pad[1], pad[3], dw)
    if any(isinstance(e, int) and e < 1 for e in (oh, ow)):
        raise IRValueError(f"{op}: the {kh}x{kw} kernel {kernel.name!r} does not fit the input")
    dims = ConvDims(n, c, h, w, o, kh, kw, oh, ow, (sh, sw), (dh, dw), pad, groups)
    return BlockedConv(dims, cb, ki, ob)


def input_channel(b: BlockedConv, oc: Any, oi: Any, r: Any) -> Any:
    """The (unblocked) input channel that filter input ``r`` of output ``(oc, oi)`` reads."""
    d = b.dims
    if d.groups == 1:
        return r
    return (oc * b.ob + oi) // d.o_per_group * d.c_per_group + r


def conv2d_nchwc(
    data: Any,
    kernel: Any,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    name: str = "conv2d_nchwc",
) -> Tensor:
    """2-D convolution of blocked ``data`` with a blocked ``kernel`` (module docstring)."""
    b = blocked_conv(CONV2D_NCHWC, data, kernel, stride, padding, dilation, groups)
    d = b.dims
    it = data.shape[0].dtype
    rc = te.reduce_axis((convert(0, it), convert(d.c_per_group, it)), name="rc")
    ry = te.reduce_axis((convert(0, it), convert(d.kh, it)), name="ry")
    rx = te.reduce_axis((convert(0, it), convert(d.kw, it)), name="rx")
    (sh, sw), (dh, dw), (pt, pl) = d.stride, d.dilation, d.pad[:2]
    zero = convert(0.0, data.dtype) if data.dtype.is_float else convert(0, data.dtype)

    def body(n: Any, oc: Any, y: Any, x: Any, oi: Any) -> Any:
        c = input_channel(b, oc, oi, rc)
        h, w = y * sh + ry * dh - pt, x * sw + rx * dw - pl
        value: PrimExpr = data[n, c // b.cb, h, w, c % b.cb]
        if any(d.pad):
            inside = (h >= 0) & (h < d.h) & (w >= 0) & (w < d.w)
            value = te.if_then_else(inside, value, zero)
        tap = kernel[oc, rc // b.ki, ry, rx, rc % b.ki, oi]
        return te.sum(value * tap, axis=[rc, ry, rx])

    attrs = attrs_for(
        CONV2D_NCHWC,
        Pattern.OUT_ELEMWISE_FUSABLE,
        stride=d.stride,
        padding=d.pad,
        dilation=d.dilation,
        groups=d.groups,
    )
    shape = (d.n, d.o // b.ob, d.oh, d.ow, b.ob)
    return te.compute(shape, body, name=name, tag=CONV2D_NCHWC, attrs=attrs)
