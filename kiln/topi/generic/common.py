"""What every default CPU schedule shares: the context, the registry, vector width, helpers.

The vector width is the target's (`kiln.ir.Target.vector_bytes`: the ISA of the ``c`` target's
``mcpu``, the host's by default): 16 float32 lanes with AVX-512, 8 with AVX2. Reductions keep
`ACCUMULATOR_VECTORS` registers of partial results (`ScheduleContext.accumulator_lanes`).

Threads (`parallelize`): a loop nest runs in parallel only when its estimated time on one core
(points of the nest times a per-point cost, `NS_PER_ELEMENT` and the like) is at least
`PARALLEL_MIN_NS`. A nest whose size is symbolic is made parallel with a *grain*: the loop gets
the annotation `kiln.tir.attrs.PARALLEL_GRAIN` (the trip count below which the loop is not worth
threads), which the C emitter hands to kiln's thread pool (or prints as the OpenMP ``if``
clause), so a symbolic batch of 1 runs on one thread and a batch of 1000 on all of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kiln.ir.dtype import DataType
from kiln.ir.target import Target
from kiln.te import AxisVar, Schedule, Stage, Tensor
from kiln.te.schedule import Fuse, Split
from kiln.tir.attrs import PARALLEL_GRAIN
from kiln.tir.transform import loop_partition
from kiln.topi.utils import const_int, prod

PARTITION = loop_partition.PARTITION.removeprefix("pragma_")
"""The `kiln.te.Stage.pragma` key asking `kiln.tir.transform.LoopPartition` to split a loop."""

ACCUMULATOR_VECTORS = 2
"""Vector registers of partial results a reduction keeps: two independent chains of adds hide
most of their latency. NOTE: measured 1 thread on a Zen 4 EPYC, AVX2 code (8 lanes) with one
register / two: sum over 1M floats 283 / 147 us, softmax 128x1024 113 / 78 us, layer_norm
128x768 41 / 25 us; AVX-512 code (16 lanes): the sum 57 / 50 us, the others unchanged."""

PARALLEL_MIN_NS = 10_000.0
"""A loop nest estimated to take less than this many nanoseconds on one core runs on one thread.

NOTE: parallel loops run on kiln's thread pool (`kiln.runtime.thread_pool`): the caller works on
the loop itself and never waits for a worker that has not joined, and an idle worker spins for
a while (`kiln.config.POOL_SPIN_US`) before it sleeps. Measured on the shared 2-core Zen 4 VM
(load average 6), a job of 16 iterations through the pool from C, medians of 2000: with the
worker asleep (or the second core taken by other processes) a job costs the caller 0.2-0.3 us
more than a plain loop (2.2 vs 1.9-2.0 us, 6.1-6.3 vs 5.8-6.0 us); with the worker awake a
6 us job took 3.7 us on 2 threads. A region used to cost 10-20 us with libgomp
(``OMP_WAIT_POLICY=passive``: a futex wake and a join per region), hence the former 100 us.
Whole models (kiln's encoder, decoder, small CNN, MLP at batch 1; 2 threads, interleaved, load
6-7) showed no difference between 5, 10, 20 and 100 us beyond the noise; 10 us keeps nests
whose second half would be lost to the cost of moving their data between the cores' caches
on one thread.
"""

NS_PER_ELEMENT = 0.2
"""Estimated one-core time of one output element of an element-wise (injective) stage:
memory-bound (measured: ``add`` of two 128x768 float32 arrays in 15 us)."""

NS_PER_REDUCED = 0.05
"""Estimated one-core time per input element of a vectorized reduction (measured:
``sum(relu(x * a + b))`` over 1M float32 in 50 us)."""

PARALLEL_GRAIN_MAX = 1 << 30
"""The largest grain written on a loop (a nest whose iterations are nearly free)."""

RFACTOR_PARTS_MIN = 1 << 15
"""A full reduction (few outputs) of at least this many elements is split into parts that run
in parallel."""


@dataclass
class ScheduleContext:
    """State shared by the schedules of one graph: the target, the output stages, and the
    stages already placed (``done``)."""

    target: Target
    outputs: list[Stage] = field(default_factory=list)
    done: set[Stage] = field(default_factory=set)

    def lanes(self, dtype: DataType) -> int:
        """SIMD lanes of ``dtype`` in one of the target's vector registers (values narrower
        than 4 bytes are computed as float32)."""
        return self.target.vector_bytes // max(dtype.itemsize, 4)

    def accumulator_lanes(self, dtype: DataType) -> int:
        """Partial results a reduction of ``dtype`` keeps: `ACCUMULATOR_VECTORS` registers."""
        return ACCUMULATOR_VECTORS * self.lanes(dtype)


ScheduleFn = Callable[[Schedule, Tensor, ScheduleContext], None]

SCHEDULES: dict[str, ScheduleFn] = {}
"""tag -> default CPU schedule of the anchors with that tag."""


def register_schedule(tag: str) -> Callable[[ScheduleFn], ScheduleFn]:
    """Register ``fn`` as the default CPU schedule of anchors tagged ``tag``."""

    def deco(fn: ScheduleFn) -> ScheduleFn:
        SCHEDULES[tag] = fn
        return fn

    return deco


def extent(axis: AxisVar) -> int | None:
    """The constant extent of an axis of a compute, or None."""
    return const_int(axis.dom.extent) if axis.dom is not None else None


def vector_split(stage: Stage, axis: AxisVar, lanes: int) -> AxisVar:
    """Split ``axis`` by ``lanes`` and vectorize the inner loop; returns the outer loop. A
    constant extent that is not whole vectors has the outer loop partitioned (`LoopPartition`),
    so only the last vector is guarded. NOTE: a guard in every vector kept GCC from vectorizing
    the exponential of a softmax over rows of 49 (Swin's windows): 3.3 ms for 64x3x49x49 on one
    Zen 3 core."""
    outer, inner = stage.split(axis, factor=lanes)
    stage.vectorize(inner)
    n = extent(axis)
    if n is not None and n % lanes:
        stage.pragma(outer, PARTITION, loop_partition.SPLIT)
    return outer


def num_elements(axes: Any) -> int | None:
    """The product of the axes' constant extents (None when one is symbolic)."""
    exts = [extent(a) for a in axes]
    if any(e is None for e in exts):
        return None
    return prod(e for e in exts if e is not None)


def worth_parallel(points: int | None, ns_per_point: float = NS_PER_ELEMENT) -> bool:
    """True when a nest of ``points`` iterations costing ``ns_per_point`` each on one core should
    be split across threads (a symbolic nest: see `parallelize`)."""
    return points is None or points * ns_per_point >= PARALLEL_MIN_NS


def leaf_extent(stage: Stage, axis: AxisVar) -> int | None:
    """The constant trip count of leaf loop ``axis`` of ``stage`` (replaying its splits and
    fuses), or None when it is symbolic."""
    ext: dict[AxisVar, int | None] = {a: extent(a) for a in stage.all_iter_vars}
    for rel in stage.relations:
        if isinstance(rel, Split):
            whole = ext.get(rel.parent)
            if rel.factor is not None:
                f = const_int(rel.factor)
                ext[rel.inner] = f
                ext[rel.outer] = None if whole is None or f is None else -(-whole // f)
            else:
                p = const_int(rel.nparts) if rel.nparts is not None else None
                ext[rel.outer] = p
                ext[rel.inner] = None if whole is None or p is None else -(-whole // p)
        elif isinstance(rel, Fuse):
            a, b = ext.get(rel.outer), ext.get(rel.inner)
            ext[rel.fused] = None if a is None or b is None else a * b
    return ext.get(axis)


def inner_points(stage: Stage, axis: AxisVar) -> int:
    """Iterations of the loops inside leaf ``axis`` of ``stage`` (a symbolic loop counts 1)."""
    leaves = stage.leaf_iter_vars
    total = 1
    for a in leaves[leaves.index(axis) + 1 :]:
        total *= leaf_extent(stage, a) or 1
    return total


def parallelize(
    stage: Stage, axis: AxisVar, points: int | None, ns_per_point: float, iter_ns: float
) -> bool:
    """Run leaf ``axis`` of ``stage`` in parallel when the nest is worth it; returns whether it
    does.

    ``points`` (None: symbolic) iterations of ``ns_per_point`` each make the nest; ``iter_ns``
    estimates one iteration of ``axis``. A constant nest is parallel when it reaches
    `PARALLEL_MIN_NS`; a symbolic one is parallel with the grain ``PARALLEL_MIN_NS / iter_ns``
    (`kiln.tir.attrs.PARALLEL_GRAIN`): below that trip count it runs on one thread.
    """
    if points is not None:
        if not worth_parallel(points, ns_per_point):
            return False
        stage.parallel(axis)
        return True
    stage.parallel(axis)
    grain = math.ceil(PARALLEL_MIN_NS / max(iter_ns, 1e-3))
    if grain > 1:
        stage.pragma(axis, PARALLEL_GRAIN, min(grain, PARALLEL_GRAIN_MAX))
    return True


def fuse_all(stage: Stage, axes: list[AxisVar]) -> AxisVar | None:
    """``axes`` (adjacent leaves) fused into one loop; None when there are none."""
    if not axes:
        return None
    return stage.fuse(*axes) if len(axes) > 1 else axes[0]


def readers_of(sch: Schedule, stage: Stage) -> list[Stage]:
    """Stages that read ``stage`` once inlined stages are substituted."""
    return sch.effective_readers(stage)
