"""Schedules: how the loops of each compute are split, ordered, annotated and placed.

`create_schedule(outputs)` makes one `Stage` per operation reachable from the outputs, in
producer-before-consumer order. ``s[T]`` is the stage of tensor ``T``. A stage starts with one
loop per axis (data axes, then reduction axes); the primitives rewrite its list of leaf axes
(``split``, ``fuse``, ``reorder``), mark leaves (``parallel``, ``vectorize``, ``unroll``, ``bind``,
``pragma``) and choose where it is computed (``compute_at``, ``compute_inline``). The schedule
itself adds stages (``cache_read``, ``cache_write``). Nothing is lowered until `lower`.

Each primitive lives in its own small module (`kiln.te.prim_loops`, `prim_annotate`,
`prim_attach`, `prim_cache`) and checks its preconditions, raising `IRError` with what is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kiln.errors import IRError, IRValueError
from kiln.te import prim_annotate, prim_attach, prim_cache, prim_loops
from kiln.te.relations import Fuse, Split
from kiln.te.tensor import AxisVar, ComputeOp, Operation, PlaceholderOp, Tensor
from kiln.tir.stmt import ForKind


@dataclass(eq=False)
class IterAttr:
    """How a leaf loop runs: its kind, its GPU thread tag and its pragma annotations."""

    kind: ForKind = ForKind.SERIAL
    thread_tag: str = ""
    pragmas: dict[str, Any] = field(default_factory=dict)

    @property
    def is_default(self) -> bool:
        return self.kind is ForKind.SERIAL and not self.pragmas


class Stage:
    """The schedule of one operation: its loops (leaf axes), their kinds, and its placement."""

    def __init__(self, schedule: Schedule, op: Operation) -> None:
        self.schedule = schedule
        self.op = op
        self.origin_op = op
        self.is_output = False
        axes: list[AxisVar] = []
        if isinstance(op, ComputeOp):
            axes = [*op.axis, *op.reduce_axis]
        self.all_iter_vars: list[AxisVar] = list(axes)
        self.leaf_iter_vars: list[AxisVar] = list(axes)
        self.relations: list[Split | Fuse] = []
        self.iter_attrs: dict[AxisVar, IterAttr] = {}
        self.retired: dict[AxisVar, str] = {}
        self.attach_type = "root"  # "root" | "inline" | "scope"
        self.attach_stage: Stage | None = None
        self.attach_ivar: AxisVar | None = None
        self.scope = ""
        self.prefetches: list[tuple[Tensor, AxisVar, int]] = []

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def is_placeholder(self) -> bool:
        return isinstance(self.op, PlaceholderOp)

    @property
    def is_inlined(self) -> bool:
        return self.attach_type == "inline"

    def attr(self, axis: AxisVar) -> IterAttr:
        """The (mutable) attributes of ``axis``, created on first use."""
        return self.iter_attrs.setdefault(axis, IterAttr())

    def __repr__(self) -> str:
        return f"Stage({self.name!r}, leaves={[a.name for a in self.leaf_iter_vars]})"

    # -- loop structure ----------------------------------------------------------------------
    def split(
        self, parent: AxisVar, factor: Any = None, nparts: Any = None
    ) -> tuple[AxisVar, AxisVar]:
        """Split ``parent`` into (outer, inner) by an inner ``factor`` or ``nparts`` outer parts."""
        return prim_loops.split(self, parent, factor, nparts)

    def fuse(self, *axes: AxisVar) -> AxisVar:
        """Fuse adjacent leaf axes (outermost first) into one."""
        return prim_loops.fuse(self, *axes)

    def reorder(self, *axes: AxisVar) -> None:
        """Put the given leaf axes in this order (in the positions they occupy together)."""
        prim_loops.reorder(self, *axes)

    def tile(
        self, x: AxisVar, y: AxisVar, x_factor: Any, y_factor: Any
    ) -> tuple[AxisVar, AxisVar, AxisVar, AxisVar]:
        """Split ``x`` and ``y`` and order the result (x_outer, y_outer, x_inner, y_inner)."""
        return prim_loops.tile(self, x, y, x_factor, y_factor)

    # -- loop kinds --------------------------------------------------------------------------
    def parallel(self, axis: AxisVar) -> None:
        """Run ``axis`` across CPU threads."""
        prim_annotate.set_kind(self, axis, ForKind.PARALLEL, "parallel")

    def vectorize(self, axis: AxisVar) -> None:
        """Run ``axis`` as SIMD lanes (its extent must be a constant when lowered)."""
        prim_annotate.set_kind(self, axis, ForKind.VECTORIZED, "vectorize")

    def unroll(self, axis: AxisVar) -> None:
        """Unroll ``axis``."""
        prim_annotate.set_kind(self, axis, ForKind.UNROLLED, "unroll")

    def bind(self, axis: AxisVar, thread: Any) -> None:
        """Bind ``axis`` to a GPU thread index (``"threadIdx.x"``, ``"blockIdx.y"``, ...)."""
        prim_annotate.bind(self, axis, thread)

    def pragma(self, axis: AxisVar, key: str, value: Any = 1) -> None:
        """Annotate the loop of ``axis`` with ``pragma_<key> = value``."""
        prim_annotate.pragma(self, axis, key, value)

    def prefetch(self, tensor: Tensor, axis: AxisVar, offset: int) -> None:
        """At the top of each iteration of leaf ``axis``, hint the CPU to fetch the elements of
        ``tensor`` this stage reads ``offset`` iterations of ``axis`` later (the loops inside
        ``axis`` at their first iteration). The address may lie past the tensor's end: a
        prefetch never faults."""
        prim_annotate.prefetch(self, tensor, axis, offset)

    # -- placement ---------------------------------------------------------------------------
    def compute_at(self, parent: Any, axis: AxisVar) -> None:
        """Compute this stage inside loop ``axis`` of its consumer ``parent``."""
        prim_attach.compute_at(self, parent, axis)

    def compute_inline(self) -> None:
        """Substitute this element-wise stage into its consumers."""
        prim_attach.compute_inline(self)

    def compute_root(self) -> None:
        """Compute this stage in full at the top level (undoes compute_at / compute_inline)."""
        prim_attach.compute_root(self)


class Schedule:
    """Stages of a compute graph in producer-before-consumer order; ``s[T]`` finds T's stage."""

    def __init__(self, outputs: list[Operation]) -> None:
        self.outputs = list(outputs)
        self.stages: list[Stage] = []
        self.stage_map: dict[Operation, Stage] = {}
        for op in self.outputs:
            self._visit(op)
        for op in self.outputs:
            self.stage_map[op].is_output = True

    def _visit(self, root: Operation) -> None:
        """Add stages for ``root`` and the producers it needs, producers first (depth-first, an
        explicit stack: graphs thousands of stages deep)."""
        if root in self.stage_map:
            return
        active = {id(root)}  # the ops on the stack: meeting one again is a cycle
        stack = [(root, iter(root.input_tensors))]
        while stack:
            op, inputs = stack[-1]
            for t in inputs:
                producer = t.op
                if producer in self.stage_map:
                    continue
                if id(producer) in active:
                    raise IRValueError(
                        f"create_schedule: operation {producer.name!r} depends on itself"
                    )
                active.add(id(producer))
                stack.append((producer, iter(producer.input_tensors)))
                break
            else:
                stack.pop()
                active.discard(id(op))
                self.add_stage(Stage(self, op), len(self.stages))

    def add_stage(self, stage: Stage, index: int) -> None:
        """Insert ``stage`` at ``index`` of the (producer-first) stage list."""
        self.stages.insert(index, stage)
        self.stage_map[stage.op] = stage

    def new_stage(self, op: Operation, index: int, scope: str) -> Stage:
        """A fresh stage of ``op`` storing into ``scope``, inserted at ``index`` (the stages
        `cache_read` and `cache_write` add)."""
        stage = Stage(self, op)
        stage.scope = scope
        self.add_stage(stage, index)
        return stage

    def __getitem__(self, key: Any) -> Stage:
        if isinstance(key, Stage):
            if key.schedule is not self:
                raise IRValueError(f"stage {key.name!r} belongs to another schedule")
            return key
        op = key.op if isinstance(key, Tensor) else key
        if not isinstance(op, Operation):
            raise IRError(f"schedule lookup: expected a tensor, operation or stage, got {key!r}")
        stage = self.stage_map.get(op)
        if stage is None:
            raise IRValueError(
                f"tensor {op.name!r} is not part of this schedule (it does not feed its outputs)"
            )
        return stage

    def __contains__(self, key: Any) -> bool:
        op = key.op if isinstance(key, Tensor) else key
        return op in self.stage_map

    def readers(self, stage: Stage) -> list[Stage]:
        """Stages whose current operation reads ``stage``'s output directly."""
        return [
            s
            for s in self.stages
            if any(self.stage_map.get(t.op) is stage for t in s.op.input_tensors)
        ]

    def effective_readers(self, stage: Stage) -> list[Stage]:
        """Readers of ``stage`` once inlined stages are substituted into their own readers."""
        out: list[Stage] = []
        for r in self.readers(stage):
            for s in self.effective_readers(r) if r.is_inlined else [r]:
                if s not in out:
                    out.append(s)
        return out

    def owner_of(self, axis: Any) -> Stage | None:
        """The stage that has ``axis`` among its axes (current or retired), if any."""
        for s in self.stages:
            if axis in s.all_iter_vars:
                return s
        return None

    def cache_read(self, tensor: Tensor, scope: str, readers: Any) -> Tensor:
        """A copy of ``tensor`` in ``scope`` that ``readers`` read instead of ``tensor``."""
        return prim_cache.cache_read(self, tensor, scope, readers)

    def cache_write(self, tensor: Tensor, scope: str) -> Tensor:
        """Compute ``tensor`` into a ``scope`` buffer first; its stage then copies it out."""
        return prim_cache.cache_write(self, tensor, scope)

    def __repr__(self) -> str:
        return f"Schedule({[s.name for s in self.stages]})"


def create_schedule(outputs: Any) -> Schedule:
    """A default schedule (every stage at the root, one serial loop per axis) for ``outputs``."""
    items = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    if not items:
        raise IRValueError("create_schedule: needs at least one output tensor")
    ops: list[Operation] = []
    for t in items:
        op = t.op if isinstance(t, Tensor) else t
        if not isinstance(op, Operation):
            raise IRError(f"create_schedule: expected tensors, got {t!r}")
        if isinstance(op, PlaceholderOp):
            raise IRValueError(f"create_schedule: placeholder {op.name!r} cannot be an output")
        if op not in ops:
            ops.append(op)
    return Schedule(ops)
