"""Default CUDA schedules of the operator library, chosen by pattern and tag.

`kiln.topi.schedule_for(outputs, target="cuda")` inlines the injective stages (as on the CPU)
and then calls `schedule_graph`, which gives every remaining stage at the root its own kernel:

- injective (element-wise, broadcast, data movement): all axes fused, split by the block size
  (256, at most the target's ``max_threads_per_block``), bound to ``blockIdx.x`` /
  ``threadIdx.x``; a ragged tail is guarded;
- row-wise outputs (softmax, log_softmax, layer_norm) whose last axis fits in a block: one
  block per row (``blockIdx.x``), the row's elements on ``threadIdx.x``;
- reductions (sum, max, the per-row statistics of softmax and layer_norm): one thread per
  output, the reduction loop serial in that thread, accumulating in a ``local`` register;
- matmul / dense / batch_matmul: 16 x 16 output tiles, one per block (``blockIdx.y`` over the
  batch and row tiles, ``blockIdx.x`` over the column tiles), one output per thread
  (``threadIdx.y`` / ``threadIdx.x``) accumulated in a ``local`` register; the reduction loop
  is split by 16 and, per outer step, the 16 x 16 tiles of both operands are copied into
  ``shared`` memory by the whole block (one element per thread, a cooperative fetch), the inner
  16 steps unrolled over them. Bound inference widens a ``shared`` stage over the block's
  threads, and `ThreadSync` puts ``__syncthreads()`` around the fetch.

NOTE: no schedule here uses a block-wide tree reduction yet.
"""

from __future__ import annotations

from typing import Any

from kiln.errors import IRValueError
from kiln.ir.target import Target
from kiln.te import AxisVar, ComputeOp, Schedule, Stage, Tensor, thread_axis
from kiln.topi import tag
from kiln.topi.generic.common import ScheduleContext, extent, fuse_all

BLOCK = 256
"""Threads per block of the injective and reduction schedules."""

TILE = 16
"""Side of the output tile (threads per block: TILE * TILE) of the matrix products."""

MATMUL_TAGS = ("matmul", "dense", "batch_matmul")
ROW_TAGS = (tag.SOFTMAX, tag.LOG_SOFTMAX, tag.LAYER_NORM)


def is_cuda_target(target: Any) -> bool:
    """True when ``target`` (a string, dict or `kiln.ir.Target`) is a CUDA target."""
    return Target.from_any(target).kind == "cuda"


def max_threads(target: Any) -> int:
    """``BLOCK`` capped by the target's ``max_threads_per_block``."""
    attrs = dict(Target.from_any(target).attrs)
    return min(BLOCK, int(attrs.get("max_threads_per_block") or BLOCK))


def schedule_graph(sch: Schedule, ctx: ScheduleContext) -> None:
    """Bind every root stage of ``sch`` that owns loops (see module docstring)."""
    threads = max_threads(ctx.target)
    for stage in list(sch.stages):
        op = stage.op
        if stage in ctx.done or stage.is_inlined or not isinstance(op, ComputeOp):
            continue
        if stage.attach_type != "root":
            continue
        if not op.axis:
            raise IRValueError(
                f"schedule_for(target='cuda'): stage {stage.name!r} has no data-parallel axis "
                "(a full reduction to a scalar); give the output at least one axis"
            )
        if op.tag in MATMUL_TAGS and op.reduce_axis and len(op.axis) >= 2:
            schedule_matmul(sch, op.output(0), ctx)
        elif op.reduce_axis:
            schedule_reduce(sch, op.output(0), ctx, threads)
        elif op.tag in ROW_TAGS:
            schedule_rows(stage, threads)
        else:
            schedule_injective(stage, threads)
        ctx.done.add(stage)


def bind_flat(stage: Stage, axes: list[AxisVar], threads: int) -> None:
    """Fuse ``axes``, split by ``threads``, bind the parts to ``blockIdx.x`` / ``threadIdx.x``."""
    fused = fuse_all(stage, axes)
    assert fused is not None
    bx, tx = stage.split(fused, factor=threads)
    stage.bind(bx, thread_axis("blockIdx.x"))
    stage.bind(tx, thread_axis("threadIdx.x"))


def schedule_injective(stage: Stage, threads: int) -> None:
    """One thread per element, ``threads`` per block."""
    bind_flat(stage, list(stage.op.axis), threads)


def schedule_rows(stage: Stage, threads: int) -> None:
    """One block per row when the last axis fits in a block, else as injective."""
    axes = list(stage.op.axis)
    last = extent(axes[-1])
    if len(axes) < 2 or last is None or last > threads:
        schedule_injective(stage, threads)
        return
    row = fuse_all(stage, axes[:-1])
    assert row is not None
    stage.bind(row, thread_axis("blockIdx.x"))
    stage.bind(axes[-1], thread_axis("threadIdx.x"))


def schedule_reduce(sch: Schedule, t: Tensor, ctx: ScheduleContext, threads: int) -> None:
    """One thread per output; the reduction runs serially in a ``local`` accumulator."""
    stage = sch[t]
    local = sch.cache_write(t, "local")
    bind_flat(stage, list(stage.op.axis), threads)
    leaf = stage.leaf_iter_vars[-1]
    sch[local].compute_at(stage, leaf)
    ctx.done.add(sch[local])


def schedule_matmul(sch: Schedule, t: Tensor, ctx: ScheduleContext) -> None:
    """``TILE x TILE`` output tiles per block staged through shared memory (see module
    docstring)."""
    stage = sch[t]
    local = sch.cache_write(t, "local")
    axes = list(stage.op.axis)
    i, j = axes[-2], axes[-1]
    io, ii = stage.split(i, factor=TILE)
    jo, ji = stage.split(j, factor=TILE)
    stage.reorder(*axes[:-2], io, jo, ii, ji)
    by = fuse_all(stage, [*axes[:-2], io])
    assert by is not None
    stage.bind(by, thread_axis("blockIdx.y"))
    stage.bind(jo, thread_axis("blockIdx.x"))
    stage.bind(ii, thread_axis("threadIdx.y"))
    stage.bind(ji, thread_axis("threadIdx.x"))
    lst = sch[local]
    lst.compute_at(stage, ji)
    lop = lst.op
    assert isinstance(lop, ComputeOp)
    ko, ki = lst.split(lop.reduce_axis[-1], factor=TILE)
    lst.unroll(ki)
    ctx.done.add(lst)
    for operand in lop.input_tensors:
        if len(operand.shape) < 2:
            continue
        shared = sch.cache_read(operand, "shared", [local])
        fetch = sch[shared]
        fetch.compute_at(lst, ko)
        # NOTE: cooperative fetch: the block's threads each copy one element of the tile (the
        # lowering reuses the enclosing threadIdx, striding when the tile is larger).
        fetch.bind(fetch.op.axis[-2], thread_axis("threadIdx.y"))
        fetch.bind(fetch.op.axis[-1], thread_axis("threadIdx.x"))
        ctx.done.add(fetch)
