"""Default CPU schedules: the shared context and registry (`common`), graph-changing steps
(`graph`), and one module per operator family. Importing this package registers the schedules
of the nn operators."""

from kiln.topi.generic import nn as _nn  # registers softmax, layer_norm and pooling schedules
from kiln.topi.generic import unblock as _unblock  # registers the unblocking layout transform
from kiln.topi.generic.common import SCHEDULES, ScheduleContext, register_schedule
from kiln.topi.generic.graph import pad_axis, recompute_for, rfactor
from kiln.topi.generic.injective import schedule_injective
from kiln.topi.generic.reduction import schedule_reduce

__all__ = [
    "SCHEDULES",
    "ScheduleContext",
    "pad_axis",
    "recompute_for",
    "register_schedule",
    "rfactor",
    "schedule_injective",
    "schedule_reduce",
]
