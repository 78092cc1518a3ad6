"""Injective operators that move data: ``transpose``, ``reshape``, ``concatenate``, ``split``,
``pad``, ``mirror_pad``, ``strided_slice``, ``take`` and ``gather``.

Every output element reads at most one input element through an index map (pad and concatenate
choose between sources with `if_then_else`, which evaluates only the chosen side), so all of them
are ``INJECTIVE``. Shapes must be constant where the output shape depends on them (reshape,
slicing, split); errors name the operator and the tensor.

Indices of ``take``/``gather`` are read at run time; ``mode`` says what an out-of-range index does:
``"clip"`` (default) clamps it into ``[0, n - 1]`` (negative indices become 0), ``"wrap"`` takes
it modulo ``n`` (so -1 is the last element, as in Python), ``"raise"`` (numpy's and ONNX's rule)
accepts ``[-n, n - 1]``, a negative index counting from the end once, and raises an ``IndexError``
at run time for any other, naming the operator, the index and the range (the check is a
``tir.assert_in_range`` that `LowerIntrin` places before the statement, out of the loops it does
not depend on; indices `kiln.arith` proves in range are not checked); ``"fast"`` is *unchecked*:
it trusts the index, and an out-of-range one reads outside the tensor (undefined behaviour:
garbage or a crash), so use it only for indices known to be valid. Every mode compares in a type
that holds both the index and the extent (an int64 index ``2**40`` is never narrowed first).

NOTE: the default stays ``"clip"``, TVM's topi default (a TVM test keeps its meaning); the graph
level (`kiln.relax.op.take`, ``gather_elements``) and the frontends use ``"raise"``.
"""

from __future__ import annotations

from typing import Any

from kiln import te
from kiln.errors import IRError, IRValueError
from kiln.te import Tensor
from kiln.tir.buffer import index_dtype_of
from kiln.tir.expr import Cast, FloorMod, Max, Min, PrimExpr, Select, Sub, convert
from kiln.tir.op import assert_in_range
from kiln.topi import tag
from kiln.topi.utils import (
    as_operand,
    check_tensor,
    const_int,
    const_shape,
    index_list,
    normalize_axis,
    prod,
    show_shape,
)


def _injective(shape: Any, f: Any, name: str) -> Tensor:
    return te.compute(shape, f, name=name, tag=tag.INJECTIVE, attrs=tag.attrs_for(tag.INJECTIVE))


def transpose(x: Tensor, axes: Any = None, name: str = "T_transpose") -> Tensor:
    """``x`` with its axes permuted (``axes=None`` reverses them), as ``numpy.transpose``."""
    x = check_tensor("transpose", x)
    n = x.ndim
    perm = list(range(n))[::-1] if axes is None else list(axes)
    perm = [normalize_axis("transpose", x, a) for a in perm]
    if sorted(perm) != list(range(n)):
        raise IRValueError(
            f"transpose: axes {list(axes)} are not a permutation of the {n} axes of tensor "
            f"{x.name!r}"
        )
    shape = tuple(x.shape[p] for p in perm)

    def f(*i: PrimExpr) -> PrimExpr:
        idx: list[PrimExpr] = [convert(0)] * n
        for k, p in enumerate(perm):
            idx[p] = i[k]
        return x[tuple(idx)]

    return _injective(shape, f, name)


def _reshape_target(x: Tensor, newshape: Any) -> tuple[int, ...]:
    size = prod(const_shape("reshape", x))
    dims = [newshape] if isinstance(newshape, int) else list(newshape)
    if any(isinstance(d, bool) or not isinstance(d, int) for d in dims):
        raise IRError(f"reshape: the new shape {newshape!r} must be a list of ints")
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise IRValueError(f"reshape: bad new shape {tuple(dims)} for tensor {x.name!r}")
    known = prod(d for d in dims if d != -1)
    if -1 in dims:
        if known == 0 or size % known:
            raise IRValueError(
                f"reshape: cannot reshape tensor {x.name!r} of shape {show_shape(x)} "
                f"({size} elements) into {tuple(dims)}"
            )
        dims[dims.index(-1)] = size // known
    if prod(dims) != size:
        raise IRValueError(
            f"reshape: cannot reshape tensor {x.name!r} of shape {show_shape(x)} ({size} "
            f"elements) into {tuple(dims)} ({prod(dims)} elements)"
        )
    return tuple(dims)


def _unflatten(flat: PrimExpr, shape: tuple[int, ...]) -> tuple[PrimExpr, ...]:
    """The row-major index of element ``flat`` in ``shape``."""
    if prod(shape) == 0:  # an empty tensor: no element is ever read
        return tuple(convert(0, flat.dtype) for _ in shape)
    out: list[PrimExpr] = []
    stride = prod(shape)
    for d in shape:
        stride //= d
        v = flat // stride if stride > 1 else flat
        out.append(FloorMod(v, convert(d, v.dtype)) if len(out) else v)
    return tuple(out)


def reshape(x: Tensor, newshape: Any, name: str = "T_reshape") -> Tensor:
    """``x`` in ``newshape`` (row-major order; one dimension may be -1)."""
    x = check_tensor("reshape", x)
    src = const_shape("reshape", x)
    # NOTE: the output's dims take the input's index dtype, so the flat index and the indices
    # read from ``x`` have the dtype of x's axes: an inlined producer over int64 axes (relax
    # shapes) gets int64 indices substituted for them, never int32 ones.
    idx = index_dtype_of(x.shape)
    dims = tuple(convert(d, idx) for d in _reshape_target(x, newshape))

    def f(*i: PrimExpr) -> PrimExpr:
        flat: PrimExpr = convert(0, idx)
        for k, d in enumerate(dims):
            flat = flat * d + i[k] if k else i[k]
        return x[_unflatten(flat, src)] if src else x[()]

    return _injective(dims, f, name)


def concatenate(tensors: Any, axis: int = 0, name: str = "T_concat") -> Tensor:
    """The tensors joined along ``axis`` (same dtype, same extent on every other axis)."""
    items = list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]
    if not items:
        raise IRValueError("concatenate: needs at least one tensor")
    items = [check_tensor("concatenate", t) for t in items]
    first = items[0]
    ax = normalize_axis("concatenate", first, axis)
    sizes = []
    for t in items:
        _check_concat_peer(first, t, ax)
        sizes.append(const_shape("concatenate", t)[ax])
    shape = list(first.shape)
    shape[ax] = convert(sum(sizes), first.shape[ax].dtype)

    def f(*i: PrimExpr) -> PrimExpr:
        offsets = [sum(sizes[:k]) for k in range(len(items))]
        value: PrimExpr | None = None
        for t, off in reversed(list(zip(items, offsets))):
            idx = list(i)
            idx[ax] = i[ax] - off
            read = t[tuple(idx)]
            value = (
                read if value is None else te.if_then_else(i[ax] < off + t.shape[ax], read, value)
            )
        assert value is not None
        return value

    if len(items) == 1 or ax == first.ndim - 1:
        return _injective(tuple(shape), f, name)
    attrs = tag.attrs_for(tag.INJECTIVE, concat_axis=ax)
    return te.compute(tuple(shape), f, name=name, tag=tag.INJECTIVE, attrs=attrs)


def _check_concat_peer(first: Tensor, t: Tensor, ax: int) -> None:
    if t.ndim != first.ndim:
        raise IRValueError(
            f"concatenate: tensor {t.name!r} has rank {t.ndim} but tensor {first.name!r} has "
            f"rank {first.ndim}"
        )
    if t.dtype != first.dtype:
        raise IRError(
            f"concatenate: tensor {t.name!r} has dtype {t.dtype} but tensor {first.name!r} has "
            f"dtype {first.dtype}"
        )
    a, b = const_shape("concatenate", first), const_shape("concatenate", t)
    if any(x != y for d, (x, y) in enumerate(zip(a, b)) if d != ax):
        raise IRValueError(
            f"concatenate: tensor {t.name!r} of shape {b} does not match tensor {first.name!r} "
            f"of shape {a} outside axis {ax}"
        )


def strided_slice(
    x: Tensor, begin: Any, end: Any, strides: Any = None, axes: Any = None, name: str = "T_slice"
) -> Tensor:
    """``x[begin:end:strides]`` per axis with Python/numpy slice rules (negative indices count
    from the end, bounds are clamped, negative strides walk backwards). ``axes`` says which
    axes ``begin``/``end``/``strides`` describe (default: the leading ones)."""
    x = check_tensor("strided_slice", x)
    shape = const_shape("strided_slice", x)
    begin = index_list("strided_slice", x, "begin", begin)
    end = index_list("strided_slice", x, "end", end)
    strides = (
        [1] * len(begin) if strides is None else index_list("strided_slice", x, "strides", strides)
    )
    which = list(range(len(begin))) if axes is None else list(axes)
    if not len(begin) == len(end) == len(strides) == len(which):
        raise IRValueError(
            f"strided_slice: begin, end, strides and axes must have the same length, got "
            f"{len(begin)}, {len(end)}, {len(strides)}, {len(which)} (tensor {x.name!r})"
        )
    starts, steps, lens = [0] * x.ndim, [1] * x.ndim, list(shape)
    for b, e, s, a in zip(begin, end, strides, which):
        d = normalize_axis("strided_slice", x, a)
        if s == 0 or s is None:
            raise IRValueError(f"strided_slice: stride {s} on axis {d} of tensor {x.name!r}")
        start, stop, step = slice(b, e, s).indices(shape[d])
        starts[d], steps[d], lens[d] = start, step, len(range(start, stop, step))

    def f(*i: PrimExpr) -> PrimExpr:
        return x[tuple(i[d] * steps[d] + starts[d] for d in range(x.ndim))]

    return _injective(tuple(lens), f, name)


def split(
    x: Tensor, indices_or_sections: Any, axis: int = 0, name: str = "T_split"
) -> list[Tensor]:
    """``x`` cut along ``axis`` into equal sections (an int) or at the given indices, as
    ``numpy.split``."""
    x = check_tensor("split", x)
    ax = normalize_axis("split", x, axis)
    n = const_shape("split", x)[ax]
    if isinstance(indices_or_sections, int) and not isinstance(indices_or_sections, bool):
        k = indices_or_sections
        if k <= 0 or n % k:
            raise IRValueError(
                f"split: axis {ax} of tensor {x.name!r} has extent {n}, which cannot be split "
                f"into {k} equal sections"
            )
        cuts = [n // k * j for j in range(1, k)]
    else:
        cuts = [int(c) for c in indices_or_sections]
    bounds = [0, *cuts, n]
    out = []
    for j, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
        out.append(strided_slice(x, [lo], [max(lo, hi)], [1], [ax], name=f"{name}_{j}"))
    return out


def _pad_widths(x: Tensor, pad_width: Any) -> list[tuple[int, int]]:
    if isinstance(pad_width, int):
        pairs = [(pad_width, pad_width)] * x.ndim
    else:
        items = list(pad_width)
        if len(items) == 2 and all(isinstance(v, int) for v in items):
            pairs = [(items[0], items[1])] * x.ndim
        else:
            pairs = [tuple(p) for p in items]  # type: ignore[misc]
    if len(pairs) != x.ndim or any(len(p) != 2 for p in pairs):
        raise IRValueError(
            f"pad: pad_width {pad_width!r} must give (before, after) for each of the {x.ndim} "
            f"axes of tensor {x.name!r}"
        )
    if any(not isinstance(v, int) or v < 0 for p in pairs for v in p):
        raise IRValueError(f"pad: pad widths must be non-negative ints, got {pad_width!r}")
    return pairs  # type: ignore[return-value]


def _grow(dim: PrimExpr, by: int) -> PrimExpr:
    """``dim + by``, folded when ``dim`` is a constant."""
    value = const_int(dim)
    if value is not None:
        return convert(value + by, dim.dtype)
    return dim + by if by else dim


def pad(x: Tensor, pad_width: Any, pad_value: Any = 0, name: str = "T_pad") -> Tensor:
    """``x`` surrounded by ``pad_value`` (numpy ``pad_width``: an int, a (before, after) pair
    for every axis, or one pair per axis)."""
    x = check_tensor("pad", x)
    pairs = _pad_widths(x, pad_width)
    value = as_operand("pad", pad_value, x.dtype)
    shape = tuple(_grow(d, b + a) for d, (b, a) in zip(x.shape, pairs))

    def f(*i: PrimExpr) -> PrimExpr:
        conds = []
        for k, (b, _) in enumerate(pairs):
            if b:
                conds.append(i[k] >= b)
            if pairs[k][1]:
                conds.append(i[k] < x.shape[k] + b)
        read = x[tuple(i[k] - b if b else i[k] for k, (b, _) in enumerate(pairs))]
        if not conds:
            return read
        cond = conds[0]
        for c in conds[1:]:
            cond = cond & c
        return te.if_then_else(cond, read, value)

    return _injective(shape, f, name)


def mirror_pad(x: Tensor, pad_width: Any, mode: str, name: str = "T_pad") -> Tensor:
    """``x`` padded with its own elements: ``"reflect"`` mirrors about the edge element
    (``[2, 1 | 0, 1, 2 | 1, 0]``, each width below the axis' extent), ``"edge"`` repeats it
    (``[0, 0 | 0, 1, 2 | 2, 2]``). ``pad_width`` as in `pad`."""
    x = check_tensor("pad", x)
    pairs = _pad_widths(x, pad_width)
    if mode not in ("reflect", "edge"):
        raise IRValueError(f"pad: mode must be 'constant', 'reflect' or 'edge', got {mode!r}")
    for k, (b, a) in enumerate(pairs):
        n = const_int(x.shape[k])
        if mode == "reflect" and (b or a) and (n is None or max(b, a) >= n):
            raise IRValueError(
                f"pad: reflect padding ({b}, {a}) of axis {k} of tensor {x.name!r} needs "
                f"widths below its extent {x.shape[k]}"
            )
    shape = tuple(_grow(d, b + a) for d, (b, a) in zip(x.shape, pairs))

    def source(i: PrimExpr, n: PrimExpr, b: int) -> PrimExpr:
        src = i - b if b else i
        if mode == "edge":
            return Min(Max(src, convert(0, src.dtype)), n - convert(1, n.dtype))
        src = Select(src < convert(0, src.dtype), Sub(convert(0, src.dtype), src), src)
        top = n - convert(1, n.dtype)
        return Select(src > top, top + top - src, src)

    def f(*i: PrimExpr) -> PrimExpr:
        idx = [source(i[k], x.shape[k], b) if b or a else i[k] for k, (b, a) in enumerate(pairs)]
        return x[tuple(idx)]

    return _injective(shape, f, name)


def _index_value(v: PrimExpr, n: PrimExpr, mode: str, what: str) -> PrimExpr:
    """The index read for index value ``v`` into an axis of extent ``n`` under ``mode``
    (``what`` names the operator, axis and tensor in a ``"raise"`` error).

    NOTE: an index of a type wider than the extent's (int64 indices, uint32 ones into an int32
    axis) is clipped, wrapped or checked in its own type before it is narrowed: narrowing first
    would turn ``2**32`` into 0 and ``2**31`` into a negative index."""
    if mode == "fast":
        return Cast(n.dtype, v) if v.dtype != n.dtype else v
    if v.dtype.bits > n.dtype.bits or (v.dtype.is_uint and v.dtype.bits >= n.dtype.bits):
        wide = Cast(v.dtype, n)
        return Cast(n.dtype, _bounded(v, wide, mode, what))
    v = Cast(n.dtype, v) if v.dtype != n.dtype else v
    return _bounded(v, n, mode, what)


def _bounded(v: PrimExpr, n: PrimExpr, mode: str, what: str) -> PrimExpr:
    """``v`` (of ``n``'s dtype) clamped into ``[0, n - 1]`` (``"clip"``), taken modulo ``n``
    (``"wrap"``), or checked to lie in ``[-n, n)`` and counted from the end when negative
    (``"raise"``; unsigned indices in ``[0, n)``)."""
    if mode == "wrap":
        return FloorMod(v, n)
    if mode == "raise":
        zero = convert(0, v.dtype)
        if v.dtype.is_uint:
            return assert_in_range(v, zero, n, what)
        checked = assert_in_range(v, Sub(zero, n), n, what)
        return Select(checked < zero, v + n, v)  # NOTE: the check is evaluated once
    top = n - convert(1, n.dtype)
    return Min(v, top) if v.dtype.is_uint else Min(Max(v, convert(0, v.dtype)), top)


MODES = ("clip", "wrap", "raise", "fast")
"""What an out-of-range index does (module docstring)."""


def _check_indices(op: str, indices: Any, mode: str) -> Tensor:
    indices = check_tensor(op, indices, "indices")
    if not indices.dtype.is_integer:
        raise IRError(
            f"{op}: indices tensor {indices.name!r} has dtype {indices.dtype}; expected an "
            "integer dtype"
        )
    if mode not in MODES:
        raise IRValueError(f"{op}: mode must be 'clip', 'wrap', 'raise' or 'fast', got {mode!r}")
    return indices


def _check_source_axis(op: str, t: Tensor, axis: int, indices: Tensor) -> None:
    """Indices into an axis of constant extent 0 have nothing to read (numpy raises)."""
    if const_int(t.shape[axis]) == 0 and all(const_int(d) != 0 for d in indices.shape):
        raise IRValueError(
            f"{op}: axis {axis} of tensor {t.name!r} has extent 0, so no index is valid; "
            f"indices tensor {indices.name!r} is not empty"
        )


def take(
    a: Tensor, indices: Tensor, axis: Any = None, mode: str = "clip", name: str = "T_take"
) -> Tensor:
    """``numpy.take(a, indices, axis)``: elements of ``a`` picked along ``axis`` (of the
    flattened ``a`` when None) by an integer tensor; ``mode`` as in the module docstring."""
    a = check_tensor("take", a)
    indices = _check_indices("take", indices, mode)
    if axis is None:
        a = reshape(a, (-1,), name=f"{a.name}_flat")
        axis = 0
    ax = normalize_axis("take", a, axis)
    _check_source_axis("take", a, ax, indices)
    shape = (*a.shape[:ax], *indices.shape, *a.shape[ax + 1 :])
    k = indices.ndim

    what = f"take on axis {ax} of tensor {a.name!r}"
    n = a.shape[ax]
    if mode == "raise":
        # NOTE: checked once per index in a stage of their own, not once per element read:
        # the copy's loops stay free of error exits (outlined to the thread pool, vectorized)
        idx = te.compute(
            indices.shape,
            lambda *j: _index_value(indices[j], n, mode, what),
            name=f"{name}_index",
            tag=tag.INJECTIVE,
            attrs=tag.attrs_for(tag.INJECTIVE, no_inline=True),
        )

        def f(*i: PrimExpr) -> PrimExpr:
            return a[(*i[:ax], idx[i[ax : ax + k]], *i[ax + k :])]

    else:

        def f(*i: PrimExpr) -> PrimExpr:
            v = _index_value(indices[i[ax : ax + k]], n, mode, what)
            return a[(*i[:ax], v, *i[ax + k :])]

    return _injective(shape, f, name)


def gather(
    data: Tensor, axis: int, indices: Tensor, mode: str = "clip", name: str = "T_gather"
) -> Tensor:
    """``numpy.take_along_axis`` / ``torch.gather``: ``out[i] = data[i with i[axis] replaced by
    indices[i]]``; ``indices`` has ``data``'s rank and its shape fits inside ``data``'s except
    along ``axis``."""
    data = check_tensor("gather", data)
    indices = _check_indices("gather", indices, mode)
    ax = normalize_axis("gather", data, axis)
    _check_source_axis("gather", data, ax, indices)
    if indices.ndim != data.ndim:
        raise IRValueError(
            f"gather: indices tensor {indices.name!r} has rank {indices.ndim} but data tensor "
            f"{data.name!r} has rank {data.ndim}"
        )
    for d, (a, b) in enumerate(zip(data.shape, indices.shape)):
        ca, cb = const_int(a), const_int(b)
        if d != ax and ca is not None and cb is not None and cb > ca:
            raise IRValueError(
                f"gather: indices tensor {indices.name!r} has extent {cb} on axis {d}, more "
                f"than data tensor {data.name!r} ({ca})"
            )

    what = f"gather on axis {ax} of tensor {data.name!r}"

    def f(*i: PrimExpr) -> PrimExpr:
        v = _index_value(indices[i], data.shape[ax], mode, what)
        return data[(*i[:ax], v, *i[ax + 1 :])]

    return _injective(indices.shape, f, name)


def gather_nd(
    data: Tensor,
    indices: Tensor,
    batch_dims: int = 0,
    mode: str = "raise",
    name: str = "T_gather_nd",
) -> Tensor:
    """ONNX ``GatherND``: the last axis of ``indices`` (``k`` entries, a constant) addresses the
    ``k`` axes of ``data`` after its first ``batch_dims`` (which ``indices`` shares);
    ``out[b, r, t] = data[b, indices[b, r, 0], ..., indices[b, r, k - 1], t]``, of shape
    ``indices.shape[:-1] + data.shape[batch_dims + k:]``. Each index is checked against its own
    axis (``mode`` as in the module docstring; ``"raise"`` by default, as ONNX requires)."""
    data = check_tensor("gather_nd", data)
    indices = _check_indices("gather_nd", indices, mode)
    k = const_int(indices.shape[-1]) if indices.ndim else None
    b = batch_dims
    if k is None or k < 1 or b < 0 or b + k > data.ndim or indices.ndim < b + 1:
        raise IRValueError(
            f"gather_nd: indices tensor {indices.name!r} of shape {show_shape(indices)} cannot "
            f"address data tensor {data.name!r} of shape {show_shape(data)} with "
            f"batch_dims={batch_dims} (the last extent must be a constant in 1..{data.ndim - b})"
        )
    for c in range(k):
        _check_source_axis("gather_nd", data, b + c, indices)
    shape = (*indices.shape[:-1], *data.shape[b + k :])
    r = indices.ndim - 1  # output axes that come from indices

    def f(*i: PrimExpr) -> PrimExpr:
        picked = []
        for c in range(k):
            where = (*i[:r], convert(c, indices.shape[-1].dtype))
            what = f"gather_nd on axis {b + c} of tensor {data.name!r}"
            picked.append(_index_value(indices[where], data.shape[b + c], mode, what))
        return data[(*i[:b], *picked, *i[r:])]

    return _injective(shape, f, name)


__all__ = [
    "concatenate",
    "gather",
    "gather_nd",
    "pad",
    "reshape",
    "split",
    "strided_slice",
    "take",
    "transpose",
]
