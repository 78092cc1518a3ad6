"""Helpers the x86 schedules share: work estimates, fusing, explicit vectors, packing stages,
epilogue inlining and finding the stage that hosts a register tile."""

from __future__ import annotations

from typing import Any

from kiln import te
from kiln.te import AxisVar, ComputeOp, Schedule, Stage
from kiln.topi.generic import common as generic
from kiln.topi.generic.common import PARTITION, inner_points, leaf_extent
from kiln.topi.tag import is_injective
from kiln.topi.utils import const_int

NS_PER_MAC = 0.02
"""Estimated one-core time of one multiply-add of a register-tiled kernel (about 100 GFLOP/s of
float32 FMA on one Zen 4 core); a nest below `kiln.topi.generic.common.PARALLEL_MIN_NS` of it
runs on one thread (see the measurements there)."""

"""The loop pragma asking for `kiln.tir.transform.LoopPartition` (`Stage.pragma` adds the
``pragma_`` prefix)."""

EXPLICIT_VECTOR = "explicit_vector"
"""The loop pragma asking the C emitter for explicit vector code
(`kiln.codegen.c_vector`)."""


def work_of(op: Any) -> int | None:
    """Points in the iteration space of ``op`` (data and reduction axes); None if symbolic."""
    total = 1
    for axis in (*op.axis, *getattr(op, "reduce_axis", ())):
        ext = const_int(axis.dom.extent) if axis.dom is not None else None
        if ext is None:
            return None
        total *= ext
    return total


def work_of_reduction(op: Any) -> int:
    """Points of the reduction of ``op`` per output element (1 without a reduction; the
    reduction axes have constant extents)."""
    total = 1
    for axis in getattr(op, "reduce_axis", ()):
        total *= const_int(axis.dom.extent) or 1
    return total


def worth_parallel(work: int | None) -> bool:
    """True when a nest doing ``work`` multiply-adds should be split across threads (always
    for a symbolic nest; `parallelize_tiles` gives those a run-time grain)."""
    return generic.worth_parallel(work, NS_PER_MAC)


def parallelize_tiles(stage: Stage, axis: AxisVar, work: int | None, iter_work: int) -> bool:
    """`kiln.topi.generic.common.parallelize` for a nest of ``work`` multiply-adds (None:
    symbolic) whose loop ``axis`` does ``iter_work`` of them per iteration."""
    return generic.parallelize(stage, axis, work, NS_PER_MAC, iter_work * NS_PER_MAC)


def fuse_axes(stage: Stage, axes: list[AxisVar]) -> AxisVar:
    """Adjacent leaves ``axes`` fused into one loop (a single axis is returned as it is)."""
    return stage.fuse(*axes) if len(axes) > 1 else axes[0]


def pick_parallel(stage: Stage, loops: list[AxisVar]) -> AxisVar:
    """The loop of ``loops`` (outermost first) to run in parallel: the first with at least 4
    iterations, else the one with the most."""
    extents = [leaf_extent(stage, a) for a in loops]
    for axis, ext in zip(loops, extents):
        if ext is None or ext >= 4:
            return axis
    return max(zip(loops, extents), key=lambda p: p[1] or 0)[0]


def vectorize(stage: Stage, axis: AxisVar) -> None:
    """Vectorize ``axis`` as explicit vector code."""
    stage.vectorize(axis)
    stage.pragma(axis, EXPLICIT_VECTOR)


def schedule_pack(stage: Stage, work: int | None) -> None:
    """A root copy stage (packing, padding): the axes before the last two fused and run in
    parallel when the consumer and the copy are worth it (a symbolic copy: with a run-time
    grain), the last axis vectorized.

    A stage whose attrs give a ``read_order`` (positions of the last two axes, ``(-1, -2)`` for
    a transposing pack) gets its two innermost loops in that order instead, unvectorized, so it
    reads its source contiguously. One whose attrs set ``partition`` (a zero-padding copy) has
    its serial loops over the last two axes' outer neighbours split where its padding
    condition changes (`kiln.tir.transform.LoopPartition`): the interior is a plain copy.
    NOTE: the second-to-last axis stays a loop of its own: fusing it too would put a division
    and a modulo in every row's address.
    """
    if stage.attach_type != "root" or stage.is_inlined:
        return
    axes = list(stage.op.axis)
    outer = axes[:-2] if len(axes) >= 3 else axes[:-1]
    copies = work_of(stage.op)
    order = (stage.op.attrs or {}).get("read_order")
    if order is not None:
        stage.reorder(*(axes[i] for i in order))
    serial = outer
    if outer and copies is None:
        fused = fuse_axes(stage, outer)
        per_iter = inner_points(stage, fused) * generic.NS_PER_ELEMENT
        generic.parallelize(stage, fused, None, generic.NS_PER_ELEMENT, per_iter)
        serial = []
    elif outer and worth_parallel(work) and generic.worth_parallel(copies):
        stage.parallel(fuse_axes(stage, outer))
        serial = []
    if order is None:
        vectorize(stage, axes[-1])
    if (stage.op.attrs or {}).get("partition"):
        for axis in [*serial[-1:], axes[-2]]:
            stage.pragma(axis, PARTITION)


def schedule_packs(sch: Schedule, t: Any, work: int | None) -> list[Stage]:
    """`schedule_pack` for each ``no_inline`` input of ``t``'s compute; returns their stages."""
    out = []
    for src in t.op.input_tensors:
        if isinstance(src.op, ComputeOp) and (src.op.attrs or {}).get("no_inline"):
            schedule_pack(sch[src], work)
            out.append(sch[src])
    return out


def create_with_inlined_epilogues(outs: Any) -> Schedule:
    """A schedule of ``outs`` where every element-wise compute that is not an output (and not
    marked ``no_inline``) is inlined into its readers."""
    sch = te.create_schedule(outs)
    for stage in sch.stages:
        op = stage.op
        if stage.is_output or not isinstance(op, ComputeOp) or op.reduce_axis:
            continue
        if is_injective(op) and not (op.attrs or {}).get("no_inline"):
            stage.compute_inline()
    return sch


def tile_host(sch: Schedule, stage: Stage) -> Stage | None:
    """The stage whose loops host the tiles of ``stage``: its only reader (epilogues inlined)
    with the same rank; when inlining left several readers, the direct reader is computed at
    the root again and hosts the tiles. None when no such stage exists."""
    readers = sch.effective_readers(stage)
    if len(readers) != 1:
        direct = sch.readers(stage)
        if len(direct) != 1 or not direct[0].is_inlined:
            return None
        direct[0].compute_root()
        readers = [direct[0]]
    host = readers[0]
    if host.attach_type != "root" or len(host.op.axis) != len(stage.op.axis):
        return None
    if host.relations or any(not a.is_default for a in host.iter_attrs.values()):
        return None
    return host
