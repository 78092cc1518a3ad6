"""The default CPU schedule of a reduction, with its element-wise epilogue when it has one.

Two shapes of reduction, told apart by whether the innermost input axis is reduced:

- **inner** (``sum(x, axis=-1)``, full reductions, softmax rows): the reduced values are
  contiguous, so the innermost reduction axis is `rfactor`-ed into ``lanes`` partial
  accumulators (`ScheduleContext.accumulator_lanes`: a data-parallel, vectorizable axis of a
  few registers) reduced once at the end. Output elements run
  in parallel; when there are too few of them (a full reduction) the reduction is also split
  into ``parts`` that run in parallel.
- **outer** (``sum(x, axis=0)``): the innermost axis is a data axis, so the loops become
  ``(outer data, last_outer)`` (parallel) / reduction axes / ``last_inner`` (vectorized, as many
  lanes as the accumulators): each vector lane accumulates its own output element.

An element-wise epilogue (``mean`` = sum * 1/count, or any injective output of the same shape
that reads the reduction at its own index) becomes the *host*: its loops are scheduled like the
reduction's data loops and the reduction is computed inside them (``compute_at``), so the
reduced values never go through a full-size buffer. Without an epilogue, accumulators that
would otherwise live in the output (outer reductions) or in a buffer shared by the threads
(parallel parts) are kept in a small local buffer (``cache_write``) that GCC keeps in registers,
and stored once.
"""

from __future__ import annotations

from kiln.ir import structural_equal
from kiln.te import AxisVar, ComputeOp, ProducerLoad, Schedule, Stage, Tensor
from kiln.te.inline import effective_bodies, loads_in
from kiln.te.reduce import Reduce
from kiln.tir.expr import Max, Min
from kiln.topi.generic.common import (
    NS_PER_ELEMENT,
    NS_PER_REDUCED,
    RFACTOR_PARTS_MIN,
    ScheduleContext,
    extent,
    fuse_all,
    inner_points,
    num_elements,
    parallelize,
    readers_of,
    worth_parallel,
)
from kiln.topi.generic.graph import rfactor

EXTREME_ACCUMULATORS = 2
"""How many times the usual accumulators an inner float max/min reduction keeps. NOTE: a float
``Max``/``Min`` is a compare, a NaN test, an or and a blend (`kiln.codegen.c_expr`'s
``min_max``), a longer dependency chain than a sum's add; measured (1 thread, AVX2, under load):
max over rows of 256x1024 31 -> 24 us, over 2**18 values 55 -> 33 us with twice the
accumulators (NaN-dropping ``maxps``: 16 and 34 us)."""


def _float_extreme(op: ComputeOp, lanes: int) -> bool:
    """Whether ``op`` is a max or min reduction of floats whose innermost reduction axis fills
    ``lanes`` accumulators at least twice (so it is still `rfactor`-ed with them)."""
    body = op.body
    if not isinstance(body, Reduce) or not body.dtype.is_float:
        return False
    k_ext = extent(op.reduce_axis[-1])
    return isinstance(body.combiner.result, (Max, Min)) and (k_ext is None or k_ext >= 2 * lanes)


def reduces_innermost(op: ComputeOp, lanes: int) -> bool:
    """True when the innermost input axis is reduced (see module docstring)."""
    dims = op.attrs.get("reduce_dims")
    ndim = op.attrs.get("reduce_ndim")
    if dims is not None and ndim is not None:
        return ndim - 1 in dims
    if not op.axis:
        return True
    last = extent(op.axis[-1])
    return last is not None and last < lanes


def epilogue_host(sch: Schedule, t: Tensor, ctx: ScheduleContext) -> Stage | None:
    """The output stage that reads ``t`` element for element and nothing else reads ``t``."""
    stage = sch[t]
    readers = readers_of(sch, stage)
    if stage.is_output or len(readers) != 1 or readers[0] not in ctx.outputs:
        return None
    host = readers[0]
    hop = host.op
    if not isinstance(hop, ComputeOp) or hop.reduce_axis or host.relations:
        return None
    if len(hop.axis) != len(stage.op.axis):
        return None
    if not all(same_extent(a, b) for a, b in zip(hop.axis, stage.op.axis)):
        return None
    body = effective_bodies(sch)[host]
    for load in loads_in(body):
        if sch.stage_map.get(load.producer.op) is stage and not _identity(load, hop.axis):
            return None
    return host


def same_extent(a: AxisVar, b: AxisVar) -> bool:
    """True when axes ``a`` and ``b`` have the same extent (equal constants, or the same
    symbolic expression)."""
    ea, eb = extent(a), extent(b)
    if ea is not None or eb is not None:
        return ea == eb
    assert a.dom is not None and b.dom is not None
    return structural_equal(a.dom.extent, b.dom.extent)


def reduce_points(op: ComputeOp) -> int | None:
    """Input elements one output of reduction ``op`` reads (None when symbolic)."""
    return num_elements(op.reduce_axis)


def _identity(load: ProducerLoad, axes: tuple[AxisVar, ...]) -> bool:
    return len(load.indices) == len(axes) and all(i is a for i, a in zip(load.indices, axes))


def schedule_reduce(sch: Schedule, t: Tensor, ctx: ScheduleContext) -> None:
    """Schedule the reduction ``t`` (and its epilogue host, if any); see module docstring."""
    stage = sch[t]
    op = stage.op
    assert isinstance(op, ComputeOp)
    lanes = ctx.accumulator_lanes(t.dtype)
    host = epilogue_host(sch, t, ctx)
    if reduces_innermost(op, ctx.lanes(t.dtype)):
        if _float_extreme(op, lanes * EXTREME_ACCUMULATORS):
            lanes *= EXTREME_ACCUMULATORS
        _schedule_inner(sch, stage, lanes, host, ctx)
    else:
        _schedule_outer(sch, stage, lanes, host, ctx)
    ctx.done.add(stage)
    if host is not None:
        ctx.done.add(host)


def point_ns(op: ComputeOp) -> float:
    """Estimated one-core time of one output of reduction ``op`` (a symbolic reduction extent
    counts as one vector of accumulators)."""
    return (reduce_points(op) or 32) * NS_PER_REDUCED + NS_PER_ELEMENT


def _host_loop(host: Stage, ns: float) -> AxisVar | None:
    """Fuse the host's axes into one loop (parallel when worth it, ``ns`` per point) and
    return it."""
    axes = list(host.op.axis)
    fused = fuse_all(host, axes)
    if fused is not None:
        parallelize(host, fused, num_elements(axes), ns, ns)
    return fused


def _parts(k_ext: int | None, n_out: int | None) -> int:
    """How many parallel parts a reduction of ``k_ext`` values per output is split into."""
    if k_ext is None or n_out is None or n_out >= 4 or k_ext < RFACTOR_PARTS_MIN:
        return 1
    if not worth_parallel(k_ext * n_out, NS_PER_REDUCED):
        return 1
    return max(2, min(64, k_ext // (RFACTOR_PARTS_MIN // 2)))


def _schedule_inner(
    sch: Schedule, stage: Stage, lanes: int, host: Stage | None, ctx: ScheduleContext
) -> None:
    op = stage.op
    assert isinstance(op, ComputeOp)
    k_ext = extent(op.reduce_axis[-1])
    n_out = num_elements(op.axis)
    use_rf = k_ext is None or k_ext >= 2 * lanes
    parts = _parts(k_ext, n_out) if use_rf else 1
    rf = rfactor(sch, op.output(0), lanes, parts) if use_rf else None
    data = list(op.axis)
    attach: AxisVar | None = None
    ns = point_ns(op)
    if host is not None:
        loop = _host_loop(host, ns)
        if loop is not None:
            stage.compute_at(host, loop)
            attach = data[-1] if data else None
    elif data:
        attach = fuse_all(stage, data)
        if n_out is None or n_out > 1:
            parallelize(stage, attach, n_out, ns, ns)
    if rf is None:
        return
    if parts > 1:
        ctx.done.update(_parallel_parts(sch, rf))
        return
    st = sch[rf]
    _lanes_innermost(st)
    if attach is not None:
        st.compute_at(stage, attach)


def _lanes_innermost(st: Stage) -> None:
    """Order a stage's loops (data..., reduction..., last data) and vectorize the last."""
    op = st.op
    assert isinstance(op, ComputeOp)
    st.reorder(*op.axis[:-1], *op.reduce_axis, op.axis[-1])
    st.vectorize(op.axis[-1])


def _parallel_parts(sch: Schedule, rf: Tensor) -> list[Stage]:
    """Run the parts of a partial reduction in parallel, each accumulating its lanes in a local
    buffer (registers) and storing them once; returns the stages placed."""
    local = sch[sch.cache_write(rf, "local")]
    copy = sch[rf]
    axes = list(copy.op.axis)
    head = fuse_all(copy, axes[:-1])
    copy.vectorize(axes[-1])
    copy.parallel(head)
    _lanes_innermost(local)
    local.compute_at(copy, head)
    return [copy, local]


def _schedule_outer(
    sch: Schedule, stage: Stage, lanes: int, host: Stage | None, ctx: ScheduleContext
) -> None:
    """Vectorize over the last data axis with the reduction loops outside it; the accumulators
    of one vector of outputs live in a tile buffer (the epilogue's, or a local one)."""
    total = num_elements(stage.op.axis)
    ns = point_ns(stage.op)  # type: ignore[arg-type]
    if host is None:
        local = sch[sch.cache_write(stage.op.output(0), "local")]
        ctx.done.add(local)
        host, stage = stage, local
    haxes = list(host.op.axis)
    jo, ji = host.split(haxes[-1], factor=lanes)
    outer = fuse_all(host, [*haxes[:-1], jo])
    host.vectorize(ji)
    parallelize(host, outer, total, ns, ns * inner_points(host, outer))
    stage.compute_at(host, outer)
    _lanes_innermost(stage)
