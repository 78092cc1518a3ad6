"""2-D pooling over NCHW tensors: ``max_pool2d``, ``avg_pool2d``, ``global_avg_pool2d``.

``max_pool2d`` and ``avg_pool2d`` also take channel-blocked NCHWc tensors (rank 5,
`kiln.topi.layout`): the block axis is carried through like the channel axis.

Output size per spatial axis (PyTorch's rule): ``(size + pad_lo + pad_hi - dilation * (k - 1)
- 1) / stride + 1``, rounded down, or up with ``ceil_mode`` (a window that would start inside
the high padding is dropped). ``padding`` is an int, a ``(pad_h, pad_w)`` pair (both sides), or
``(top, left, bottom, right)``. A window's taps are ``start + t * dilation`` for ``t < k`` with
``start = o * stride - pad_lo``.

Every read is clipped to the input: a tap outside ``[0, size)`` (in the padding, or, with
``ceil_mode``, past the padded input's end) is never loaded. The test is emitted on each axis
whose windows can leave the input (`tap_in_input`), so an unpadded floor-mode pool has
none.

Every window must hold at least one input element (`check_pool_padding`): an output over
padding alone would be -inf (maximum) or 0 / 0 = NaN (mean without the padding), so
such a geometry is an error. Each side's padding must be below the dilated window
``dilation * (k - 1) + 1`` (onnxruntime's rule; PyTorch asks for at most half), and with
dilation no window may straddle a small input without a tap inside it.

max_pool2d ignores padded positions. avg_pool2d sums the window (padding counts as 0) and
divides by the number of taps inside the padded input (``count_include_pad=True``, PyTorch's
default; with ``ceil_mode`` the part of the last window past the padded input is not counted, as
in PyTorch and onnxruntime) or inside the input itself (``count_include_pad=False``): `tap_count`.
The window reduction is a ``COMM_REDUCE`` compute tagged ``"pool"``; the average's division is an
element-wise epilogue.
"""

from __future__ import annotations

from typing import Any

from kiln import te
from kiln.errors import IRError, IRValueError
from kiln.te import Tensor
from kiln.tir.expr import Cast, Max, Min, PrimExpr, convert
from kiln.topi import tag
from kiln.topi.reduce import lowest, max_reducer, mean
from kiln.topi.utils import check_numeric, check_tensor, const_int, show_shape


def _pair(op: str, value: Any, what: str) -> tuple[int, int]:
    items = [value, value] if isinstance(value, int) else list(value)
    if len(items) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        raise IRError(f"{op}: {what} must be an int or a pair of ints, got {value!r}")
    if any(v <= 0 for v in items):
        raise IRValueError(f"{op}: {what} must be positive, got {value!r}")
    return items[0], items[1]


def _padding(op: str, padding: Any) -> tuple[int, int, int, int]:
    if isinstance(padding, int):
        pads = [padding] * 4
    else:
        items = list(padding)
        pads = items * 2 if len(items) == 2 else items
    if len(pads) != 4 or any(not isinstance(p, int) or p < 0 for p in pads):
        raise IRError(
            f"{op}: padding must be an int, (pad_h, pad_w) or (top, left, bottom, right) of "
            f"non-negative ints, got {padding!r}"
        )
    return pads[0], pads[1], pads[2], pads[3]


def check_pool_padding(
    op: str,
    x: Tensor,
    pool_size: tuple[int, int],
    dilation: tuple[int, int],
    padding: tuple[int, int, int, int],
    strides: tuple[int, int] | None = None,
    out_hw: tuple[Any, Any] | None = None,
) -> None:
    """Every window must hold an input element (see module docstring): each side's padding is
    below the dilated window, and, when the extents are constant (``x``'s spatial axes and
    ``out_hw``), no window's taps all fall in the padding."""
    for k, (side, pad) in enumerate(zip(("top", "left", "bottom", "right"), padding)):
        span = dilation[k % 2] * (pool_size[k % 2] - 1) + 1
        if pad >= span:
            raise IRValueError(
                f"{op}: {side} padding {pad} of tensor {x.name!r} is not smaller than the window "
                f"({span}): windows would lie entirely in the padding; use padding below {span}"
            )
    if strides is None or out_hw is None:
        return
    for k, axis in enumerate(("height", "width")):
        size, out = const_int(x.shape[2 + k]), const_int(out_hw[k])
        if size is None or out is None:
            continue
        taps = range(0, dilation[k] * pool_size[k], dilation[k])
        for o in range(out):
            start = o * strides[k] - padding[k]
            if not any(0 <= start + t < size for t in taps):
                raise IRValueError(
                    f"{op}: window {o} along the {axis} of tensor {x.name!r} reads only padding "
                    f"(extent {size}, window {pool_size[k]}, dilation {dilation[k]}, padding "
                    f"{padding[k]}); reduce the padding or the dilation"
                )


def _out_size(size: int, k: int, s: int, lo: int, hi: int, d: int, ceil_mode: bool) -> int:
    span = size + lo + hi - d * (k - 1) - 1
    n = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (n - 1) * s >= size + lo:
        n -= 1
    return n


def tap_in_input(
    i: PrimExpr, size: Any, out: Any, k: int, s: int, lo: int, hi: int, d: int
) -> PrimExpr | None:
    """The test that tap index ``i`` lies in ``[0, size)``, with only the bounds some window of
    the ``out`` windows along this axis can cross (low padding; high padding or a ``ceil_mode``
    window past the end), or None where every tap is inside. Symbolic extents: the high bound
    is tested when there is high padding (the floor rule keeps unpadded windows inside)."""
    tests = []
    if lo > 0:
        tests.append(i >= convert(0, i.dtype))
    size_c, out_c = const_int(size), const_int(out)
    if size_c is None or out_c is None:
        past_end = hi > 0
    else:
        past_end = (out_c - 1) * s + d * (k - 1) - lo >= size_c
    if past_end:
        tests.append(i < (convert(size, i.dtype) if isinstance(size, int) else size))
    if not tests:
        return None
    return tests[0] if len(tests) == 1 else tests[0] & tests[1]


def tap_count(
    o: PrimExpr, s: int, lo: int, size: Any, hi: int, k: int, d: int, include_pad: bool
) -> PrimExpr:
    """The number of taps ``o * s - lo + t * d`` (``t < k``) of window ``o`` inside the padded
    input ``[-lo, size + hi)`` (``include_pad``) or inside the input ``[0, size)``."""
    it = o.dtype
    start = o * s - convert(lo, it)
    end = convert(size, it) + convert(hi, it) if include_pad else convert(size, it)
    last = end - 1 - start  # the offset of the last element in range from the start
    top = Min(last if d == 1 else last // d, convert(k - 1, it))
    if include_pad:  # the first tap, at ``start >= -lo``, is always in range
        return top + 1
    first = Max(
        convert(0, it) - start if d == 1 else (convert(0, it) - start + (d - 1)) // d,
        convert(0, it),
    )
    return top - first + 1


class _Window:
    """Geometry of a pooling call: input, kernel, strides, dilation, padding, output size."""

    def __init__(
        self,
        op: str,
        x: Any,
        pool_size: Any,
        strides: Any,
        padding: Any,
        dilation: Any,
        ceil_mode: bool,
    ) -> None:
        self.x = check_tensor(op, x)
        check_numeric(op, self.x)
        if self.x.ndim not in (4, 5):
            raise IRValueError(
                f"{op}: tensor {self.x.name!r} must be NCHW (rank 4) or channel-blocked NCHWc "
                f"(rank 5), has rank {self.x.ndim}"
            )
        dims = [const_int(d) for d in self.x.shape[1:]]
        if any(d is None for d in dims):
            raise IRValueError(
                f"{op}: tensor {self.x.name!r} {show_shape(self.x)} needs constant extents "
                "except the batch"
            )
        self.h, self.w = dims[1], dims[2]
        self.index = self.x.shape[0].dtype
        """The index dtype (int64 with a symbolic batch, whose extent may be symbolic)."""
        self.kh, self.kw = _pair(op, pool_size, "pool_size")
        self.sh, self.sw = _pair(op, strides if strides is not None else pool_size, "strides")
        self.dh, self.dw = _pair(op, dilation, "dilation")
        self.pt, self.pl, self.pb, self.pr = _padding(op, padding)
        pads = (self.pt, self.pl, self.pb, self.pr)
        self.oh = _out_size(self.h, self.kh, self.sh, self.pt, self.pb, self.dh, ceil_mode)
        self.ow = _out_size(self.w, self.kw, self.sw, self.pl, self.pr, self.dw, ceil_mode)
        if self.oh <= 0 or self.ow <= 0:
            raise IRValueError(
                f"{op}: the window ({self.kh}x{self.kw}) does not fit tensor {self.x.name!r} of "
                f"spatial size {self.h}x{self.w} with this padding"
            )
        size, dil = (self.kh, self.kw), (self.dh, self.dw)
        check_pool_padding(op, self.x, size, dil, pads, (self.sh, self.sw), (self.oh, self.ow))

    @property
    def out_shape(self) -> tuple[Any, ...]:
        """``(N, C, out_h, out_w)`` (and the channel block of an NCHWc tensor)."""
        n, c = self.x.shape[0], self.x.shape[1]
        return (n, c, self.oh, self.ow, *self.x.shape[4:])

    def read(
        self, n: Any, c: Any, oh: Any, ow: Any, kh: Any, kw: Any, fill: PrimExpr, *block: Any
    ) -> Any:
        """``x`` at the window position (``block``: the index in a channel block), or ``fill``
        outside the input (`tap_in_input`: only the bounds a window can cross are tested)."""
        h = oh * self.sh + kh * self.dh - self.pt
        w = ow * self.sw + kw * self.dw - self.pl
        value = self.x[(n, c, h, w, *block)]
        tests = [
            t
            for t in (
                tap_in_input(h, self.h, self.oh, self.kh, self.sh, self.pt, self.pb, self.dh),
                tap_in_input(w, self.w, self.ow, self.kw, self.sw, self.pl, self.pr, self.dw),
            )
            if t is not None
        ]
        if not tests:
            return value
        inside = tests[0] if len(tests) == 1 else tests[0] & tests[1]
        return te.if_then_else(inside, value, fill)


def _window_reduce(win: _Window, reducer: te.Reducer, fill: PrimExpr, name: str) -> Tensor:
    zero = convert(0, win.index)
    rh = te.reduce_axis((zero, convert(win.kh, win.index)), name="rh")
    rw = te.reduce_axis((zero, convert(win.kw, win.index)), name="rw")

    def f(n: Any, c: Any, oh: Any, ow: Any, cb: Any = None) -> Any:
        block = () if cb is None else (cb,)
        return reducer(win.read(n, c, oh, ow, rh, rw, fill, *block), axis=[rh, rw])

    # NOTE: named index parameters (the optional last one is an NCHWc block) name the loops
    return te.compute(
        win.out_shape,
        f,
        name=name,
        tag=tag.POOL,
        attrs=tag.attrs_for(tag.POOL),
    )


def max_pool2d(
    x: Tensor,
    pool_size: Any,
    strides: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    name: str = "T_max_pool2d",
) -> Tensor:
    """The maximum over each window (see module docstring)."""
    win = _Window("max_pool2d", x, pool_size, strides, padding, dilation, ceil_mode)
    return _window_reduce(win, max_reducer, lowest(win.x.dtype), name)


def avg_pool2d(
    x: Tensor,
    pool_size: Any,
    strides: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    dilation: Any = 1,
    name: str = "T_avg_pool2d",
) -> Tensor:
    """The mean over each window (float tensors; see module docstring)."""
    win = _Window("avg_pool2d", x, pool_size, strides, padding, dilation, ceil_mode)
    if not win.x.dtype.is_float:
        raise IRError(f"avg_pool2d: tensor {win.x.name!r} has dtype {win.x.dtype}; expected float")
    total = _window_reduce(win, te.sum, convert(0.0, win.x.dtype), f"{name}_sum")
    inc = count_include_pad

    def f(n: PrimExpr, c: PrimExpr, oh: PrimExpr, ow: PrimExpr, cb: Any = None) -> PrimExpr:
        ch = tap_count(oh, win.sh, win.pt, win.h, win.pb, win.kh, win.dh, inc)
        cw = tap_count(ow, win.sw, win.pl, win.w, win.pr, win.kw, win.dw, inc)
        block = () if cb is None else (cb,)
        return total[(n, c, oh, ow, *block)] / Cast(win.x.dtype, ch * cw)

    return te.compute(
        win.out_shape, f, name=name, tag=tag.ELEMWISE, attrs=tag.attrs_for(tag.ELEMWISE)
    )


def global_avg_pool2d(x: Tensor, name: str = "T_global_avg_pool2d") -> Tensor:
    """The mean over H and W of an NCHW tensor, keeping them as extent-1 axes."""
    x = check_tensor("global_avg_pool2d", x)
    if x.ndim != 4:
        raise IRValueError(
            f"global_avg_pool2d: tensor {x.name!r} must be NCHW (rank 4), has rank {x.ndim}"
        )
    return mean(x, axis=(2, 3), keepdims=True, name=name)
