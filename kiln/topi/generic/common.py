"""What every default CPU schedule shares: the context, the registry, vector width, helpers.

The vector width is the target's (`kiln.ir.Target.vector_bytes`: the ISA of the ``c`` target's
``mcpu``, the host's by default): 16 float32 lanes with AVX-512, 8 with AVX2. Reductions keep
`ACCUMULATOR_VECTORS` registers of partial results (`ScheduleContext.accumulator_lanes`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kiln.ir.dtype import DataType
from kiln.ir.target import Target
from kiln.te import AxisVar, Schedule, Stage, Tensor
from kiln.topi.utils import const_int, prod

ACCUMULATOR_VECTORS = 2
"""Vector registers of partial results a reduction keeps: two independent chains of adds hide
most of their latency. NOTE: measured 1 thread on a Zen 4 EPYC, AVX2 code (8 lanes) with one
register / two: sum over 1M floats 283 / 147 us, softmax 128x1024 113 / 78 us, layer_norm
128x768 41 / 25 us; AVX-512 code (16 lanes): the sum 57 / 50 us, the others unchanged."""

PARALLEL_MIN_ELEMENTS = 16384
"""Loops touching fewer elements run on one thread: an OpenMP fork/join costs microseconds."""

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


def num_elements(axes: Any) -> int | None:
    """The product of the axes' constant extents (None when one is symbolic)."""
    exts = [extent(a) for a in axes]
    if any(e is None for e in exts):
        return None
    return prod(e for e in exts if e is not None)


def worth_parallel(elements: int | None) -> bool:
    """True when a loop over ``elements`` values should be split across threads."""
    return elements is None or elements >= PARALLEL_MIN_ELEMENTS


def fuse_all(stage: Stage, axes: list[AxisVar]) -> AxisVar | None:
    """``axes`` (adjacent leaves) fused into one loop; None when there are none."""
    if not axes:
        return None
    return stage.fuse(*axes) if len(axes) > 1 else axes[0]


def readers_of(sch: Schedule, stage: Stage) -> list[Stage]:
    """Stages that read ``stage`` once inlined stages are substituted."""
    return sch.effective_readers(stage)
