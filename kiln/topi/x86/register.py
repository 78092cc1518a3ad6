"""Plugs the x86 schedules into `kiln.topi.schedule_for` (`kiln.topi.generic` registry).

`schedule_for` inlines element-wise stages first, then calls the schedule registered for each
anchor's tag: the accumulation stages of `kiln.topi.x86` computes (tiled when the computes were
made), and the plain reductions of `kiln.topi.nn` matrix products and convolutions (tiled for
the context's target); blocked pools (`pool`). Each adapter marks the stages it placed as
done. Importing `kiln.topi.x86` registers them.
"""

from __future__ import annotations

from collections.abc import Callable

from kiln.ir.target import Target
from kiln.te import Schedule, Stage, Tensor
from kiln.topi.generic.common import ScheduleContext, register_schedule
from kiln.topi.generic.reduction import schedule_reduce
from kiln.topi.tag import POOL
from kiln.topi.x86 import common
from kiln.topi.x86.conv2d import ACC_TAG as CONV_ACC_TAG
from kiln.topi.x86.conv2d import CONV2D
from kiln.topi.x86.conv2d import schedule_packed as conv_packed
from kiln.topi.x86.conv2d import schedule_plain as conv_plain
from kiln.topi.x86.conv2d_nchwc import ACC_TAG as NCHWC_ACC_TAG
from kiln.topi.x86.conv2d_nchwc import schedule_packed as nchwc_packed
from kiln.topi.x86.dense import ACC_TAG as MATMUL_ACC_TAG
from kiln.topi.x86.dense import PLAIN_TAGS
from kiln.topi.x86.dense import schedule_packed as matmul_packed
from kiln.topi.x86.dense import schedule_plain as matmul_plain
from kiln.topi.x86.pool import pool_applies, schedule_pool_nchwc

Packed = Callable[[Schedule, Tensor, Stage], list[Stage]]
Plain = Callable[[Schedule, Tensor, Target], list[Stage]]


def _packed(tag: str, fn: Packed) -> None:
    @register_schedule(tag)
    def schedule(sch: Schedule, acc: Tensor, ctx: ScheduleContext) -> None:
        host = common.tile_host(sch, sch[acc])
        if host is not None:
            ctx.done.update(fn(sch, acc, host))


def _plain(tag: str, fn: Plain) -> None:
    @register_schedule(tag)
    def schedule(sch: Schedule, t: Tensor, ctx: ScheduleContext) -> None:
        ctx.done.update(fn(sch, t, ctx.target))


_packed(MATMUL_ACC_TAG, matmul_packed)
_packed(CONV_ACC_TAG, conv_packed)
for _tag in PLAIN_TAGS:
    _plain(_tag, matmul_plain)
_plain(CONV2D, conv_plain)
_packed(NCHWC_ACC_TAG, nchwc_packed)


@register_schedule(POOL)
def _schedule_pool(sch: Schedule, t: Tensor, ctx: ScheduleContext) -> None:
    if pool_applies(t, ctx):
        ctx.done.update(schedule_pool_nchwc(sch, t, ctx))
    else:
        schedule_reduce(sch, t, ctx)
