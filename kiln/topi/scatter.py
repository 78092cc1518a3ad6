"""Scatters written as gathers: `scatter_elements` (ONNX ``ScatterElements``, torch ``scatter``
/ ``scatter_add`` / ``scatter_reduce``) and `scatter_nd` (ONNX ``ScatterND``, torch
``index_put``).

A scatter writes each update to the place its index names. Here each output element instead
looks at every update that could land on it (those along the axis for `scatter_elements`, all
of them for `scatter_nd`) and reduces the ones whose index names it: plain TE computes with
reduction axes and no loops of their own, so they lower and schedule like any reduction. That
costs O(output * candidates): fine for the index tensors models scatter with (a cache row, a
few labels, a window's patches); a serial kernel is the next step for large ones.

``reduction`` says how the updates landing on one element combine with it: ``"update"`` (the
last one in row-major order of the indices replaces the element: what a sequential loop writes
last), ``"add"``, ``"mul"``, ``"min"``, ``"max"``, ``"mean"`` (float only). With
``include_self=False`` the element's own value takes no part where some update lands (torch's
``scatter_reduce``). A negative index counts from the end; an index outside ``-n..n-1`` lands
nowhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kiln import te
from kiln.errors import IRValueError
from kiln.te import Tensor
from kiln.tir.expr import Cast, Max, Min, PrimExpr, Select, const
from kiln.topi import tag
from kiln.topi.utils import const_int, normalize_axis

REDUCTIONS = ("update", "add", "mul", "min", "max", "mean")
"""The ways updates combine with the element they land on (module docstring)."""

_PROD = te.comm_reducer(lambda a, b: a * b, lambda t: const(1, t), name="prod")
_REDUCERS = {"add": te.sum, "mean": te.sum, "mul": _PROD, "min": te.min, "max": te.max}
_BOTH = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "min": Min, "max": Max}

Match = Callable[[Sequence[PrimExpr], list[Any]], PrimExpr]
Read = Callable[[Sequence[PrimExpr], list[Any]], PrimExpr]


def _compute(shape: Any, f: Any, name: str) -> Tensor:
    kind = tag.COMM_REDUCE
    return te.compute(shape, f, name=name, tag=kind, attrs=tag.attrs_for(kind))


def _wrapped(v: PrimExpr, n: PrimExpr) -> PrimExpr:
    """Index ``v`` into an axis of extent ``n`` as an int64 in ``0..n-1`` (a negative one
    counted from the end), or -1 when it lies outside ``-n..n-1``."""
    v, n = Cast("int64", v), Cast("int64", n)
    zero = const(0, "int64")
    at = Select(v < zero, v + n, v)
    return Select((at >= zero) & (at < n), at, const(-1, "int64"))


def _i64(v: PrimExpr) -> PrimExpr:
    return v if str(v.dtype) == "int64" else Cast("int64", v)


def _check(op: str, data: Tensor, updates: Tensor, reduction: str) -> None:
    if reduction not in REDUCTIONS:
        raise IRValueError(f"{op}: reduction must be one of {REDUCTIONS}, got {reduction!r}")
    if updates.dtype != data.dtype:
        raise IRValueError(
            f"{op}: updates {updates.name!r} have dtype {updates.dtype}; data {data.name!r} "
            f"has {data.dtype}"
        )
    if reduction == "mean" and not data.dtype.is_float:
        raise IRValueError(f"{op}: reduction 'mean' needs float data, got {data.dtype}")


def _scatter(op: str, data: Tensor, axes: Callable[[], list[Any]], match: Match, read: Read,
             flat: Callable[[list[Any]], PrimExpr], read_flat: Callable[..., PrimExpr],
             reduction: str, include_self: bool) -> Tensor:  # fmt: skip
    """The scatter of ``data`` given how a reduction point (fresh ``axes()``) lands on an
    output position (``match``), reads its update (``read``), numbers itself (``flat``) and how
    the update of a flat number is read (``read_flat``)."""

    if include_self and reduction in ("add", "mul"):  # NOTE: 0 and 1 leave data as it is
        # NOTE: and no count: GCC 12 (-O3 -march=native -fno-trapping-math) vectorized the
        # scatter_nd sum wrongly when a count stage came with it
        return _plain(op, data, axes, match, read, reduction)

    def count_of(*p: PrimExpr) -> PrimExpr:
        ax = axes()
        hit = Select(match(p, ax), const(1, "int32"), const(0, "int32"))
        return te.sum(hit, axis=ax)

    if reduction == "update":
        return _last(op, data, axes, match, flat, read_flat)
    count = _compute(data.shape, count_of, f"T_{op}_count")

    def value_of(*p: PrimExpr) -> PrimExpr:
        ax = axes()
        return _REDUCERS[reduction](read(p, ax), axis=ax, where=match(p, ax))

    value = _compute(data.shape, value_of, f"T_{op}_value")

    def out(*p: PrimExpr) -> PrimExpr:
        old, got, n = data[p], value[p], count[p]
        if reduction == "mean":
            total = got + old if include_self else got
            k = n + const(1, "int32") if include_self else n
            return Select(n > const(0, "int32"), total / Cast(data.dtype, k), old)
        new = _BOTH[reduction](old, got) if include_self else got
        return Select(n > const(0, "int32"), new, old)

    return te.compute(
        data.shape, out, name=f"T_{op}", tag=tag.INJECTIVE, attrs=tag.attrs_for(tag.INJECTIVE)
    )


def _last(op: str, data: Tensor, axes: Callable[[], list[Any]], match: Match,
          flat: Callable[[list[Any]], PrimExpr],
          read_flat: Callable[..., PrimExpr]) -> Tensor:  # fmt: skip
    """``data`` with each element replaced by the last update landing on it (the greatest flat
    number among those that match), if any."""

    def last_of(*p: PrimExpr) -> PrimExpr:
        ax = axes()
        return te.max(Select(match(p, ax), flat(ax), const(-1, "int64")), axis=ax)

    last = _compute(data.shape, last_of, f"T_{op}_last")
    return te.compute(
        data.shape,
        lambda *p: te.if_then_else(last[p] >= 0, read_flat(p, last[p]), data[p]),
        name=f"T_{op}",
        tag=tag.INJECTIVE,
        attrs=tag.attrs_for(tag.INJECTIVE),
    )


def _plain(op: str, data: Tensor, axes: Callable[[], list[Any]], match: Match, read: Read,
           reduction: str) -> Tensor:  # fmt: skip
    """``data`` plus (times) the sum (product) of the updates landing on each element."""
    none = const(0 if reduction == "add" else 1, data.dtype)

    def value_of(*p: PrimExpr) -> PrimExpr:
        ax = axes()
        return _REDUCERS[reduction](Select(match(p, ax), read(p, ax), none), axis=ax)

    value = _compute(data.shape, value_of, f"T_{op}_value")
    return te.compute(
        data.shape,
        lambda *p: _BOTH[reduction](data[p], value[p]),
        name=f"T_{op}",
        tag=tag.INJECTIVE,
        attrs=tag.attrs_for(tag.INJECTIVE),
    )


def scatter_elements(data: Tensor, indices: Tensor, updates: Tensor, axis: int = 0,
                     reduction: str = "update", include_self: bool = True) -> Tensor:  # fmt: skip
    """``out[..., indices[j], ...] <- updates[j]`` along ``axis`` for every position ``j`` of
    ``indices`` (``updates`` may be larger; its ``indices``-shaped corner is used)."""
    _check("scatter_elements", data, updates, reduction)
    ax = normalize_axis("scatter_elements", data, axis)
    if indices.ndim != data.ndim or updates.ndim != data.ndim:
        raise IRValueError(
            f"scatter_elements: data {data.name!r}, indices {indices.name!r} and updates "
            f"{updates.name!r} need one rank, got {data.ndim}, {indices.ndim}, {updates.ndim}"
        )
    ishape = indices.shape
    # NOTE: the indices are wrapped once, in a stage of their own: besides saving the work per
    # output element, GCC 12 (-O3 -march=native -fno-trapping-math) miscompiled the reduction
    # with the wrap inlined into its condition
    wrapped = te.compute(
        ishape, lambda *j: _wrapped(indices[j], data.shape[ax]), name="T_scatter_index"
    )

    def spot(p: Sequence[PrimExpr], k: PrimExpr) -> tuple[PrimExpr, ...]:
        one = [Min(p[d], ishape[d] - const(1, ishape[d].dtype)) for d in range(len(p))]
        one[ax] = Cast(p[ax].dtype, k) if k.dtype != p[ax].dtype else k
        return tuple(one)

    def match(p: Sequence[PrimExpr], ks: list[Any]) -> PrimExpr:
        cond = wrapped[spot(p, ks[0])].eq(_i64(p[ax]))
        for d in range(len(p)):
            if d != ax and not _fits(data.shape[d], ishape[d]):
                cond = cond & (p[d] < Cast(p[d].dtype, ishape[d]))
        return cond

    return _scatter(
        "scatter_elements",
        data,
        lambda: [te.reduce_axis(ishape[ax], name="k")],
        match,
        lambda p, ks: updates[spot(p, ks[0])],
        lambda ks: Cast("int64", ks[0]),
        lambda p, last: updates[spot(p, last)],
        reduction,
        include_self,
    )


def _fits(n: PrimExpr, m: PrimExpr) -> bool:
    """Whether an extent-``m`` axis provably covers an extent-``n`` one (``n <= m``)."""
    a, b = const_int(n), const_int(m)
    return n is m or (a is not None and b is not None and a <= b)


def scatter_nd(data: Tensor, indices: Tensor, updates: Tensor, reduction: str = "update") -> Tensor:
    """ONNX ``ScatterND``: ``out[indices[b]] <- updates[b]`` where the last axis of ``indices``
    (``k`` entries, a constant) addresses the first ``k`` axes of ``data``; ``updates`` has
    shape ``indices.shape[:-1] + data.shape[k:]``."""
    _check("scatter_nd", data, updates, reduction)
    k = const_int(indices.shape[-1]) if indices.ndim else None
    if k is None or not 1 <= k <= data.ndim:
        raise IRValueError(
            f"scatter_nd: the last axis of indices {indices.name!r} must have a constant "
            f"extent in 1..{data.ndim}, got shape {indices.shape}"
        )
    if indices.ndim == 1:  # NOTE: one index: a batch of one, so the reductions have an axis
        flat_idx, flat_upd = indices, updates
        indices = te.compute((1, indices.shape[0]), lambda b, t: flat_idx[t], name="T_one_index")
        updates = te.compute((1, *updates.shape), lambda b, *r: flat_upd[r], name="T_one_update")
    batch = list(indices.shape[:-1])
    offsets = _row_offsets(data, indices, k)

    def match(p: Sequence[PrimExpr], bs: list[Any]) -> PrimExpr:
        here: PrimExpr = const(0, "int64")
        for t in range(k):
            here = here * _i64(data.shape[t]) + _i64(p[t])
        return offsets[tuple(bs)].eq(here)

    def read_flat(p: Sequence[PrimExpr], last: PrimExpr) -> PrimExpr:
        return updates[(*_unflat(last, batch), *p[k:])]

    return _scatter(
        "scatter_nd",
        data,
        lambda: [te.reduce_axis(n, name=f"b{i}") for i, n in enumerate(batch)],
        match,
        lambda p, bs: updates[(*bs, *p[k:])],
        lambda bs: _flat(bs, batch),
        read_flat,
        reduction,
        True,
    )


def _row_offsets(data: Tensor, indices: Tensor, k: int) -> Tensor:
    """The flat offset in ``data.shape[:k]`` each index row names (-1: none), one stage.
    NOTE: computed once rather than in each output element's condition; see scatter_elements'
    note on GCC."""

    def position(*b: PrimExpr) -> PrimExpr:
        out, bad = const(0, "int64"), None
        for t in range(k):
            at = _wrapped(indices[(*b, const(t, b[0].dtype))], data.shape[t])
            out = out * _i64(data.shape[t]) + at
            miss = at < const(0, "int64")
            bad = miss if bad is None else bad | miss
        return Select(bad, const(-1, "int64"), out)

    return te.compute(indices.shape[:-1], position, name="T_scatter_nd_offset")


def _flat(coords: Sequence[PrimExpr], shape: Sequence[PrimExpr]) -> PrimExpr:
    """The row-major number (int64) of ``coords`` in ``shape``."""
    out: PrimExpr = const(0, "int64")
    for c, n in zip(coords, shape):
        out = out * Cast("int64", n) + Cast("int64", c)
    return out


def _unflat(number: PrimExpr, shape: Sequence[PrimExpr]) -> list[PrimExpr]:
    """The coordinates in ``shape`` of row-major ``number`` (`_flat` undone)."""
    coords, rest = [], number
    for n in reversed(shape):
        coords.insert(0, Cast(n.dtype, rest % Cast("int64", n)))
        rest = rest // Cast("int64", n)
    return coords
