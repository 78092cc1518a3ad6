"""How a stage's loops derive from its axes: `Split` and `Fuse`, recorded in ``Stage.relations``.

The loop primitives (`kiln.te.prim_loops`) append them and lowering (`kiln.te.lower_loops`)
replays them; both sit below `kiln.te.schedule`, which re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass

from kiln.te.tensor import AxisVar
from kiln.tir.expr import PrimExpr


@dataclass(frozen=True, eq=False)
class Split:
    """``parent`` = ``outer * inner_extent + inner`` (``factor`` or ``nparts`` given)."""

    parent: AxisVar
    outer: AxisVar
    inner: AxisVar
    factor: PrimExpr | None
    nparts: PrimExpr | None


@dataclass(frozen=True, eq=False)
class Fuse:
    """``fused`` = ``outer * inner_extent + inner``."""

    outer: AxisVar
    inner: AxisVar
    fused: AxisVar
