"""Default CUDA schedules: `schedule_graph` binds every loop-owning stage of a graph to
blocks and threads (see `schedule` for what each operator family gets and what it does not)."""

from kiln.topi.cuda.schedule import is_cuda_target, schedule_graph

__all__ = ["is_cuda_target", "schedule_graph"]
