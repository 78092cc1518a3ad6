"""Schedule primitives that place a stage: ``compute_at``, ``compute_inline``, ``compute_root``.

Preconditions (each raises `IRError` naming the stages):
- ``compute_at(parent, axis)``: the stage is a compute that is not an output; ``parent`` is
  another stage of the same schedule that is not inlined; ``axis`` is a current leaf of
  ``parent``; ``parent`` reads this stage (directly or through inlined stages), and every other
  reader runs inside the same loop (`nested_inside`: attached there or deeper, through other
  attached stages), since the values exist only inside ``parent``'s loop; no cycle of
  attachments.
- ``compute_inline()``: the stage is an element-wise compute (no reduction), not an output, with
  no loop transformations and no stage computed at its loops.
The reader checks are repeated at lowering, since later primitives can change who reads whom.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.errors import IRError, IRValueError
from kiln.te.prim_loops import check_has_loops, leaf_index
from kiln.te.tensor import ComputeOp, Tensor

if TYPE_CHECKING:
    from kiln.te.schedule import Stage


def _as_stage(stage: Stage, parent: Any) -> Stage:
    if isinstance(parent, Tensor):
        return stage.schedule[parent]
    if not isinstance(parent, type(stage)):  # Stage: kiln.te.schedule, which imports this module
        raise IRError(f"compute_at: expected the consumer's stage (s[T]), got {parent!r}")
    if parent.schedule is not stage.schedule:
        raise IRValueError(f"compute_at: stage {parent.name!r} belongs to another schedule")
    return parent


def nested_inside(reader: Stage, host: Stage, axis: Any) -> bool:
    """True when ``reader`` runs inside loop ``axis`` of ``host``: it is attached (directly or
    through other attached stages) to ``host`` at ``axis`` or at a loop inside it."""
    walk: Stage | None = reader
    while walk is not None and walk.attach_type == "scope":
        ivar, walk = walk.attach_ivar, walk.attach_stage
        if walk is host:
            leaves = host.leaf_iter_vars
            return axis in leaves and ivar in leaves and leaves.index(ivar) >= leaves.index(axis)
    return False


def check_readers(stage: Stage, host: Stage, axis: Any, prim: str) -> None:
    """Raise unless every reader of ``stage`` (after inlining) is ``host`` or runs inside
    ``host``'s loop ``axis``, and one does. NOTE: a host that does not read the stage itself
    places it where several readers share it (attention's exponentials, read by the row sums
    and by the product with the values, each attached below the block loop)."""
    readers = stage.schedule.effective_readers(stage)
    others = [r.name for r in readers if r is not host and not nested_inside(r, host, axis)]
    if host not in readers and (others or not readers):
        raise IRValueError(
            f"{prim}: stage {host.name!r} does not read {stage.name!r}; compute_at needs a "
            "consumer of the stage, or a stage inside whose loop every reader runs"
        )
    if others:
        raise IRValueError(
            f"{prim}: {stage.name!r} is also read by {others}; computing it inside "
            f"{host.name!r}'s loops would hide it from them (compute it at the root, or "
            "cache_read a copy for each reader)"
        )


def compute_at(stage: Stage, parent: Any, axis: Any) -> None:
    """Compute ``stage`` inside the loop of ``axis`` of its consumer ``parent``."""
    check_has_loops(stage, "compute_at")
    host = _as_stage(stage, parent)
    if host is stage:
        raise IRValueError(f"compute_at: stage {stage.name!r} cannot be computed at its own loops")
    if stage.is_output:
        raise IRValueError(
            f"compute_at: {stage.name!r} is an output of the schedule; outputs are computed "
            "at the root"
        )
    if host.is_inlined:
        raise IRValueError(
            f"compute_at: stage {host.name!r} is inlined and has no loops to host it"
        )
    leaf_index(host, axis, "compute_at")
    check_readers(stage, host, axis, "compute_at")
    walk: Stage | None = host
    while walk is not None:
        if walk is stage:
            raise IRValueError(
                f"compute_at: {host.name!r} is itself computed inside {stage.name!r}; "
                "attachments cannot form a cycle"
            )
        walk = walk.attach_stage
    stage.attach_type, stage.attach_stage, stage.attach_ivar = "scope", host, axis


def compute_inline(stage: Stage) -> None:
    """Mark ``stage`` to be substituted into every consumer."""
    check_has_loops(stage, "compute_inline")
    op = stage.op
    if not isinstance(op, ComputeOp) or op.reduce_axis:
        raise IRValueError(
            f"compute_inline: {stage.name!r} is a reduction; only element-wise computes can "
            "be inlined"
        )
    if stage.is_output:
        raise IRValueError(f"compute_inline: {stage.name!r} is an output of the schedule")
    if stage.relations or any(not a.is_default for a in stage.iter_attrs.values()):
        raise IRValueError(
            f"compute_inline: stage {stage.name!r} has loop transformations or annotations, "
            "which inlining would drop"
        )
    hosted = [s.name for s in stage.schedule.stages if s.attach_stage is stage]
    if hosted:
        raise IRValueError(
            f"compute_inline: stages {hosted} are computed at {stage.name!r}'s loops; "
            "move them first"
        )
    stage.attach_type, stage.attach_stage, stage.attach_ivar = "inline", None, None


def compute_root(stage: Stage) -> None:
    """Compute ``stage`` in full at the top level of the function."""
    if stage.is_placeholder:
        raise IRValueError(f"compute_root: {stage.name!r} is a placeholder (an input)")
    stage.attach_type, stage.attach_stage, stage.attach_ivar = "root", None, None
