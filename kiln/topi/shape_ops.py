"""Injective and creation operators whose shapes may be symbolic.

The graph level knows every output shape before it asks for a computation (its struct info
inference resolves ``-1`` in a reshape, slice bounds, broadcast shapes), so these functions take
the output dims as expressions where that is simpler than recomputing them: `reshape_to`,
`broadcast_to`, `full`. Dims may be `tir` expressions over symbolic variables throughout; the
constant-shape versions in `kiln.topi.transform` remain the ones to use for fixed shapes.
"""

from __future__ import annotations

from typing import Any

from kiln import te
from kiln.arith import Analyzer
from kiln.arith.bound import DIM_MAX
from kiln.errors import IRValueError
from kiln.ir.dtype import DataType
from kiln.te import Tensor
from kiln.tir.analysis.vars import free_vars
from kiln.tir.expr import Cast, FloorDiv, FloorMod, IntImm, Max, Min, PrimExpr, convert
from kiln.topi import tag
from kiln.topi.utils import check_tensor, index_list, normalize_axis


def _injective(shape: Any, f: Any, name: str) -> Tensor:
    return te.compute(shape, f, name=name, tag=tag.INJECTIVE, attrs=tag.attrs_for(tag.INJECTIVE))


def _same_dtype(a: PrimExpr, b: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
    if a.dtype == b.dtype:
        return a, b
    wide = a.dtype if a.dtype.bits >= b.dtype.bits else b.dtype
    return (a if a.dtype == wide else Cast(wide, a)), (b if b.dtype == wide else Cast(wide, b))


def _index_dtype(x: Tensor) -> DataType:
    """The index dtype of ``x``'s shape (int32 for a scalar)."""
    return x.shape[0].dtype if x.ndim else DataType("int", 32)


def _dims(shape: Any) -> tuple[PrimExpr, ...]:
    """Dims as expressions: Python ints become int32 constants, or int64 when another dim is
    int64 (TE needs one index dtype per computation)."""
    wide = any(isinstance(d, PrimExpr) and d.dtype.bits == 64 for d in shape)
    return tuple(
        convert(d, "int64" if wide else "int32") if isinstance(d, int) else d for d in shape
    )


def _is_one(d: PrimExpr) -> bool:
    return isinstance(d, IntImm) and d.value == 1


def expand_dims(x: Tensor, axes: Any, name: str = "T_expand_dims") -> Tensor:
    """``x`` with new axes of extent 1 at positions ``axes`` of the result."""
    x = check_tensor("expand_dims", x)
    items = [axes] if isinstance(axes, int) else list(axes)
    rank = x.ndim + len(items)
    new = sorted(a % rank for a in items)
    shape: list[PrimExpr] = []
    src = iter(x.shape)
    for d in range(rank):
        shape.append(convert(1, _index_dtype(x)) if d in new else next(src))

    def f(*i: PrimExpr) -> PrimExpr:
        return x[tuple(v for d, v in enumerate(i) if d not in new)]

    return _injective(tuple(shape), f, name)


def squeeze(x: Tensor, axes: Any = None, name: str = "T_squeeze") -> Tensor:
    """``x`` without the extent-1 axes ``axes`` (None: every extent-1 axis)."""
    x = check_tensor("squeeze", x)
    if axes is None:
        drop = [d for d, e in enumerate(x.shape) if _is_one(e)]
    else:
        items = [axes] if isinstance(axes, int) else axes
        drop = [normalize_axis("squeeze", x, a) for a in items]
    keep = [d for d in range(x.ndim) if d not in drop]

    def f(*i: PrimExpr) -> PrimExpr:
        idx = [convert(0, x.shape[d].dtype) for d in range(x.ndim)]
        for k, d in enumerate(keep):
            idx[d] = i[k]
        return x[tuple(idx)]

    return _injective(tuple(x.shape[d] for d in keep), f, name)


def broadcast_to(x: Tensor, shape: Any, name: str = "T_broadcast_to") -> Tensor:
    """``x`` broadcast to ``shape`` (numpy rules: extent-1 axes of ``x`` are stretched)."""
    x = check_tensor("broadcast_to", x)
    dims = _dims(shape)
    off = len(dims) - x.ndim
    if off < 0:
        raise IRValueError(f"broadcast_to: tensor {x.name!r} has more axes than the shape {dims}")

    def f(*i: PrimExpr) -> PrimExpr:
        idx = [
            convert(0, i[off + d].dtype) if _is_one(e) else i[off + d]
            for d, e in enumerate(x.shape)
        ]
        return x[tuple(idx)]

    return te.compute(dims, f, name=name, tag=tag.BROADCAST, attrs=tag.attrs_for(tag.BROADCAST))


def reshape_to(x: Tensor, shape: Any, name: str = "T_reshape") -> Tensor:
    """``x`` in row-major order as a tensor of ``shape`` (dims as expressions, no -1; the
    caller checks the element counts agree)."""
    x = check_tensor("reshape", x)
    dims = _dims(shape)

    def f(*i: PrimExpr) -> PrimExpr:
        flat: PrimExpr | None = None
        for k, d in enumerate(dims):
            a = i[k]
            if flat is None:
                flat = a
            else:
                f_, d_ = _same_dtype(flat, d)
                f_, a = _same_dtype(f_ * d_, a)
                flat = f_ + a
        if flat is None:
            flat = convert(0, _index_dtype(x))
        idx: list[PrimExpr] = []
        for d in reversed(x.shape):
            fl, dd = _same_dtype(flat, d)
            idx.append(FloorMod(fl, dd) if len(idx) < x.ndim - 1 else fl)
            flat = FloorDiv(fl, dd)
        return x[tuple(reversed(idx))] if x.ndim else x[()]

    return _injective(dims, f, name)


def concatenate_any(tensors: Any, axis: int = 0, name: str = "T_concat") -> Tensor:
    """The tensors joined along ``axis``; extents may be symbolic (every other axis must match,
    which the caller has checked)."""
    items = [check_tensor("concatenate", t) for t in tensors]
    ax = normalize_axis("concatenate", items[0], axis)
    offsets: list[PrimExpr] = []
    total: PrimExpr | None = None
    for t in items:
        offsets.append(total if total is not None else convert(0, t.shape[ax].dtype))
        total = t.shape[ax] if total is None else _add(total, t.shape[ax])
    shape = list(items[0].shape)
    shape[ax] = total  # type: ignore[assignment]

    def f(*i: PrimExpr) -> PrimExpr:
        value: PrimExpr | None = None
        for t, off in reversed(list(zip(items, offsets))):
            idx = list(i)
            pos, o = _same_dtype(i[ax], off)
            idx[ax] = pos - o
            read = t[tuple(idx)]
            if value is None:
                value = read
            else:
                end = _add(off, t.shape[ax])
                p, e = _same_dtype(i[ax], end)
                value = te.if_then_else(p < e, read, value)
        assert value is not None
        return value

    return _injective(tuple(shape), f, name)


def _add(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return convert(a.value + b.value, a.dtype if a.dtype.bits >= b.dtype.bits else b.dtype)
    a, b = _same_dtype(a, b)
    return a + b


def slice_axes(
    x: Tensor, axes: Any, begin: Any, end: Any, strides: Any = None, name: str = "T_slice"
) -> Tensor:
    """``x[begin:end:stride]`` on ``axes`` with Python slice rules; dims may be symbolic (then
    strides must be positive); begin / end are ints."""
    x = check_tensor("strided_slice", x)
    op = "strided_slice"
    begin, end = index_list(op, x, "begin", begin), index_list(op, x, "end", end)
    strides = [1] * len(axes) if strides is None else index_list(op, x, "strides", strides)
    if not len(axes) == len(begin) == len(end) == len(strides):
        raise IRValueError(
            f"strided_slice: axes, begin, end and strides must have the same length, got "
            f"{len(axes)}, {len(begin)}, {len(end)}, {len(strides)} (tensor {x.name!r})"
        )
    starts: list[PrimExpr] = [convert(0, d.dtype) for d in x.shape]
    steps = [1] * x.ndim
    lens: list[PrimExpr] = list(x.shape)
    for a, b, e, s in zip(axes, begin, end, strides):
        d = normalize_axis(op, x, a)
        if not s or b is None or e is None:
            raise IRValueError(
                f"strided_slice: axis {d} of tensor {x.name!r} needs an int begin and end and a "
                f"non-zero stride, got {b}:{e}:{s}"
            )
        starts[d], lens[d] = _slice_range(x, d, b, e, s)
        steps[d] = s

    def f(*i: PrimExpr) -> PrimExpr:
        out = []
        for d in range(x.ndim):
            v, st = _same_dtype(i[d] * steps[d] if steps[d] != 1 else i[d], starts[d])
            out.append(v + st)
        return x[tuple(out)]

    return _injective(tuple(lens), f, name)


def _slice_range(x: Tensor, d: int, b: int, e: int, s: int) -> tuple[PrimExpr, PrimExpr]:
    """(start, length) of ``b:e:s`` on axis ``d`` of ``x``."""
    n = x.shape[d]
    if isinstance(n, IntImm):
        r = range(*slice(b, e, s).indices(n.value))
        return convert(r.start, n.dtype), convert(len(r), n.dtype)
    if s <= 0:
        raise IRValueError(f"strided_slice: a negative stride needs a constant extent on axis {d}")
    dt = n.dtype
    zero = convert(0, dt)

    def clamp(v: int) -> PrimExpr:
        base = n + v if v < 0 else convert(v, dt)
        return Min(Max(base, zero), n)

    start, stop = clamp(b), clamp(e)
    length = Max(FloorDiv(stop - start + (s - 1), convert(s, dt)), zero)
    # NOTE: simplified as the graph level simplifies the slice's shape (dims in [0, DIM_MAX]),
    # so ``x[:, 0:2**62]`` has extent ``seq``, not a clamp that no broadcast matches with ``seq``.
    dims = Analyzer({v: (0, DIM_MAX) for v in free_vars(n)})
    return dims.simplify(start), dims.simplify(length)


def full(shape: Any, value: Any, dtype: Any, name: str = "T_full") -> Tensor:
    """A tensor of ``shape`` filled with ``value`` (a number or a scalar `tir` expression)."""
    dt = DataType.parse(dtype)
    dims = _dims(shape)
    if isinstance(value, PrimExpr):
        fill = value if value.dtype == dt else Cast(dt, value)
    else:
        fill = convert(float(value) if dt.is_float else int(value), dt)
    return te.compute(
        dims, lambda *i: fill, name=name, tag=tag.ELEMWISE, attrs=tag.attrs_for(tag.ELEMWISE)
    )


def full_like(x: Tensor, value: Any, dtype: Any = None, name: str = "T_full") -> Tensor:
    """A tensor of ``x``'s shape filled with ``value``; ``value`` may be a 0-d tensor."""
    dt = DataType.parse(dtype) if dtype is not None else x.dtype
    if isinstance(value, Tensor):
        v = value[()]
        return te.compute(
            x.shape,
            lambda *i: v if v.dtype == dt else Cast(dt, v),
            name=name,
            tag=tag.BROADCAST,
            attrs=tag.attrs_for(tag.BROADCAST),
        )
    return full(x.shape, value, dt, name)


def fill_from(shape: Any, value: Tensor, dtype: Any, name: str = "T_full") -> Tensor:
    """A tensor of ``shape`` filled with the single element of the 0-d tensor ``value``."""
    dt = DataType.parse(dtype)
    dims = _dims(shape)

    def f(*i: PrimExpr) -> PrimExpr:
        v = value[tuple(convert(0, d.dtype) for d in value.shape)]
        return v if v.dtype == dt else Cast(dt, v)

    return te.compute(dims, f, name=name, tag=tag.BROADCAST, attrs=tag.attrs_for(tag.BROADCAST))


def arange(start: Any, length: Any, step: Any, dtype: Any, name: str = "T_arange") -> Tensor:
    """``[start, start + step, ...]`` with ``length`` elements of ``dtype``."""
    dt = DataType.parse(dtype)
    n = convert(length) if isinstance(length, int) else length

    def f(i: PrimExpr) -> PrimExpr:
        k = i if i.dtype == dt else Cast(dt, i)
        return _num(start, dt) + k * _num(step, dt)

    return te.compute((n,), f, name=name, tag=tag.INJECTIVE, attrs=tag.attrs_for(tag.INJECTIVE))


def _num(v: Any, dt: DataType) -> PrimExpr:
    if isinstance(v, PrimExpr):
        return v if v.dtype == dt else Cast(dt, v)
    return convert(float(v) if dt.is_float else int(v), dt)
