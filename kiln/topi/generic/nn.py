"""Default CPU schedules of the row-wise nn operators: softmax, log_softmax, layer_norm.

When the operator works along the last axis, the output's row axes are fused into one parallel
loop and every row is finished by one thread while it is in L1. Inside that loop, per row,

- log_softmax: ``max`` (for the sum), ``log(sum(exp(x - max)))``, ``max`` again (for the
  output), then ``x - max - lse`` over the row, vectorized;
- layer_norm: ``sum`` (for the variance), ``sum((x - mean)**2)``, ``rstd``, ``sum`` again (for
  the output), then ``(x - mean) * rstd * gamma + beta``;
- softmax: ``sum(e)``, ``1 / sum``, then ``e * (1 / sum)``, where ``e = exp(x - max)`` was
  written by a first row-parallel pass (which computes each row's ``max`` in L1 first, and
  prefetches the next row while it computes ``e``: `prefetch_next_row`).

Each row reduction is `rfactor`-ed into vector accumulators (`ScheduleContext.accumulator_lanes`);
per-row values live in small scratch buffers inside the parallel loop.

NOTE: `te`'s ``compute_at`` lets an attached stage have one reader only, while here two
consumers (the next reduction and the output) need a per-row value inside the same row loop.
For ``max`` and ``mean`` the schedule recomputes the value for the second consumer
(`recompute_for`; one cheap vector pass over a row in L1). For softmax's ``exp(x - max)`` the
recomputation would double the dominant cost (measured 1.5x slower over 128x1024), so softmax
keeps ``e`` in a full-size scratch buffer instead. With a per-row ``e`` (once ``compute_at``
accepts several readers attached inside the same loop) the time is the same and the scratch
shrinks to one row.

Other axes fall back to the generic schedules: each reduction at the root (vectorized over the
inner data axes), the output as an injective stage.
"""

from __future__ import annotations

from kiln.te import AxisVar, ComputeOp, Schedule, Stage, Tensor
from kiln.tir.transform.loop_partition import SPLIT
from kiln.topi import tag
from kiln.topi.generic.common import (
    PARTITION,
    ScheduleContext,
    extent,
    fuse_all,
    num_elements,
    parallelize,
    register_schedule,
    vector_split,
)
from kiln.topi.generic.graph import recompute_for, rfactor
from kiln.topi.generic.injective import schedule_injective
from kiln.topi.generic.reduction import schedule_reduce

NS_SOFTMAX = 0.35
"""Estimated one-core time per element of softmax (``max``, ``exp(x - max)`` into a row of
scratch, its sum, the scaled output): measured 128x1024 in 45-50 us on one Zen 4 core."""

SOFTMAX_ACC_FACTOR = 2
"""softmax's ``max`` and ``sum`` keep this many times `ScheduleContext.accumulator_lanes`
partials. NOTE: measured when GCC kept the sum's partials on the stack (a store and a reload
per add; scratch is now used through ``restrict`` pointers and they stay in registers), twice
the partials halved that latency chain: 128x1024 went from ~51 to ~43 us on one Zen 4 core."""

NS_LOG_SOFTMAX = 0.45
"""Per element of log_softmax (two ``max`` passes, the ``exp`` sum, the output)."""

NS_LAYER_NORM = 0.25
"""Per element of layer_norm (four row passes; measured 128x768 in 23 us on one core)."""


def row_loops(stage: Stage, lanes: int, ns_per_element: float) -> AxisVar:
    """Fuse the row axes of ``stage`` into one loop, parallel when the rows are worth threads at
    ``ns_per_element`` (`parallelize`), and vectorize the last axis; returns the row loop."""
    axes = list(stage.op.axis)
    last = extent(axes[-1])
    if last is None or last >= lanes:
        vector_split(stage, axes[-1], lanes)
    row = fuse_all(stage, axes[:-1])
    assert row is not None
    if num_elements(axes[:-1]) != 1:
        row_ns = (last or lanes) * ns_per_element
        parallelize(stage, row, num_elements(axes), ns_per_element, row_ns)
    return row


FINAL_LANES = 4
"""Partial results of a row reduction are folded ``FINAL_LANES`` at a time before the last
scalar fold (see `reduce_in_row`)."""


def reduce_in_row(
    sch: Schedule, red: Tensor, host: Stage, at: AxisVar, lanes: int, vector: int
) -> Stage:
    """Compute the row reduction ``red`` inside ``host``'s loop ``at`` with ``lanes`` vector
    accumulators (one vector, ``vector`` lanes, for a row of symbolic length); returns the
    stage that now reads ``red``'s inputs (its rfactor stage, or itself).

    A row shorter than two sets of ``lanes`` keeps one vector of partials (Swin's rows of 49
    were a chain of 49 dependent maxima); a constant row that is not whole vectors has the
    partials' loop partitioned, so only its last step is guarded.

    NOTE: the ``lanes`` partial results are folded in two steps, ``FINAL_LANES`` at a time and
    then one by one: a single scalar fold of 32 partials is a chain of 32 dependent adds per
    row, measured 4 us of 128x1024 softmax's 53 us on one Zen 4 core. A symbolic row keeps one
    vector: its last, guarded step and the fold cost a short row (a sequence of 8) more than
    the latency chain costs a long one; measured softmax of (1, 2, n, n) over symbolic n, one
    Zen 3 core, 32 -> 8 lanes: n = 8 1.5 -> 0.5 us, 64 15.5 -> 7.2 us, 256 139 -> 113 us.
    """
    stage = sch[red]
    op = stage.op
    assert isinstance(op, ComputeOp)
    k_ext = extent(op.reduce_axis[-1])
    if k_ext is None or k_ext < 2 * lanes:
        lanes = min(lanes, vector)
    rf = rfactor(sch, red, lanes) if k_ext is None or k_ext >= 2 * lanes else None
    fold = None
    if rf is not None and lanes >= 4 * FINAL_LANES:
        fold = rfactor(sch, red, FINAL_LANES)
    stage.compute_at(host, at)
    if rf is None:
        return stage
    inner, row = stage, op.axis[-1]
    for t in (fold, rf):
        if t is None:
            continue
        rst = sch[t]
        rop = rst.op
        assert isinstance(rop, ComputeOp)
        rst.reorder(*rop.axis[:-1], *rop.reduce_axis, rop.axis[-1])
        rst.vectorize(rop.axis[-1])
        if t is rf and k_ext is not None and k_ext % lanes:
            rst.pragma(rop.reduce_axis[0], PARTITION, SPLIT)
        rst.compute_at(inner, row)
        inner, row = rst, rop.axis[-2]  # the row axis of the partials, outside their lanes
    return inner


def _fallback(sch: Schedule, out: Tensor, ctx: ScheduleContext, parts: dict[str, Tensor]) -> None:
    for t in parts.values():
        st = sch[t]
        if st.is_inlined or st in ctx.done:
            continue
        if st.op.reduce_axis:
            schedule_reduce(sch, t, ctx)
        else:
            schedule_injective(sch, t, ctx)
    schedule_injective(sch, out, ctx)


def _last_axis(op: ComputeOp, out: Tensor) -> bool:
    axis = op.attrs.get("axis")
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    return out.ndim >= 2 and axes[-1] == out.ndim - 1 and len(axes) == 1


def _inline(sch: Schedule, t: Tensor) -> None:
    st = sch[t]
    if not st.is_inlined:
        st.compute_inline()


def _done(ctx: ScheduleContext, sch: Schedule, tensors: list[Tensor]) -> None:
    ctx.done.update(sch[t] for t in tensors)


def exp_in_row(sch: Schedule, e: Tensor, host: Stage, row: AxisVar, lanes: int) -> Stage:
    """Compute softmax's exponential stage ``e`` one row at a time inside ``host``'s loop
    ``row`` (a row-sized scratch), vectorized along the row; returns its stage."""
    st = sch[e]
    if st.is_inlined:
        st.compute_root()
    last = st.op.axis[-1]
    n = extent(last)
    if n is None or n >= lanes:
        vector_split(st, last, lanes)
    st.compute_at(host, row)
    return st


def prefetch_next_row(st: Stage, lanes: int) -> None:
    """While ``st`` (split by `exp_in_row`) computes one row, prefetch the next row of the
    tensors it reads, one vector of elements (a cache line with AVX-512) per iteration.

    NOTE: the row's first pass (``max``) otherwise waits for the row to come from L3 or memory
    while the core idles, and the exp pass after it is compute-bound with the memory system
    idle; spreading the next row's fetch over the exp pass overlaps the two. Measured on one Zen
    4 core, softmax over 1024x1024: 308 -> 290 us (a single burst of prefetches at the start of
    the row did not help: 318 us)."""
    if len(st.leaf_iter_vars) < 2:
        return
    n = extent(st.op.axis[-1])
    if n is None or n % lanes:
        return
    outer = st.leaf_iter_vars[-2]
    for t in st.op.input_tensors:
        st.prefetch(t, outer, n // lanes)


@register_schedule(tag.SOFTMAX)
def schedule_softmax(sch: Schedule, out: Tensor, ctx: ScheduleContext) -> None:
    """Softmax in one row-parallel loop, each row in one pass through L1 (see module
    docstring)."""
    op = sch[out].op
    assert isinstance(op, ComputeOp)
    parts: dict[str, Tensor] = op.attrs["parts"]
    m, e, s, inv = parts["max"], parts["exp"], parts["sum"], parts["inv"]
    if not _last_axis(op, out):
        return _fallback(sch, out, ctx, parts)
    lanes, acc = ctx.lanes(out.dtype), ctx.accumulator_lanes(out.dtype)
    row = row_loops(sch[out], lanes, NS_SOFTMAX)
    sch[inv].compute_at(sch[out], row)
    reduce_in_row(sch, s, sch[inv], sch[inv].op.axis[-1], SOFTMAX_ACC_FACTOR * acc, lanes)
    # NOTE: ``e`` is read by the output and by the sum's stage, which runs inside the same row
    # loop (attached to ``inv``): `te` allows that, and ``e`` is one row of scratch.
    e_stage = exp_in_row(sch, e, sch[out], row, lanes)
    prefetch_next_row(e_stage, lanes)
    reduce_in_row(sch, m, e_stage, e_stage.op.axis[-2], SOFTMAX_ACC_FACTOR * acc, lanes)
    _done(ctx, sch, [out, m, e, s, inv])
    return None


@register_schedule(tag.LOG_SOFTMAX)
def schedule_log_softmax(sch: Schedule, out: Tensor, ctx: ScheduleContext) -> None:
    """Row-fused log_softmax (see module docstring)."""
    op = sch[out].op
    assert isinstance(op, ComputeOp)
    parts: dict[str, Tensor] = op.attrs["parts"]
    m, e, s, lse = parts["max"], parts["exp"], parts["sum"], parts["lse"]
    if not _last_axis(op, out):
        return _fallback(sch, out, ctx, parts)
    _inline(sch, e)
    copies = recompute_for(sch, out, [m])
    acc, lanes = ctx.accumulator_lanes(out.dtype), ctx.lanes(out.dtype)
    row = row_loops(sch[out], lanes, NS_LOG_SOFTMAX)
    sch[lse].compute_at(sch[out], row)
    sum_reader = reduce_in_row(sch, s, sch[lse], sch[lse].op.axis[-1], acc, lanes)
    reduce_in_row(sch, copies[m], sch[out], row, acc, lanes)
    reduce_in_row(sch, m, sum_reader, sum_reader.op.axis[len(sch[m].op.axis) - 1], acc, lanes)
    _done(ctx, sch, [out, m, s, lse, copies[m]])
    return None


@register_schedule(tag.LAYER_NORM)
def schedule_layer_norm(sch: Schedule, out: Tensor, ctx: ScheduleContext) -> None:
    """Row-fused layer_norm (see module docstring)."""
    op = sch[out].op
    assert isinstance(op, ComputeOp)
    parts: dict[str, Tensor] = op.attrs["parts"]
    total, mean, var, rstd = parts["sum"], parts["mean"], parts["var"], parts["rstd"]
    if not _last_axis(op, out):
        return _fallback(sch, out, ctx, parts)
    _inline(sch, mean)
    copies = recompute_for(sch, out, [total, mean])
    _inline(sch, copies[mean])
    acc, lanes = ctx.accumulator_lanes(out.dtype), ctx.lanes(out.dtype)
    row = row_loops(sch[out], lanes, NS_LAYER_NORM)
    sch[rstd].compute_at(sch[out], row)
    var_reader = reduce_in_row(sch, var, sch[rstd], sch[rstd].op.axis[-1], acc, lanes)
    reduce_in_row(sch, copies[total], sch[out], row, acc, lanes)
    n_rows = len(sch[total].op.axis)
    reduce_in_row(sch, total, var_reader, var_reader.op.axis[n_rows - 1], acc, lanes)
    _done(ctx, sch, [out, total, var, rstd, copies[total]])
    return None
