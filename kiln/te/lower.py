"""Lowering a schedule to a `PrimFunc` of plain TIR loops: `lower` and `create_prim_func`.

Preconditions, each an `IRError` naming the tensor: every argument is a tensor of the schedule
(or a scalar `Var`), listed once; every input the program reads and every output is an argument;
a tensor passed as an argument is computed in full (not inlined or computed at another loop);
every variable a body or shape uses is bound by the arguments; a stage computed at a consumer's
loop is read by that consumer only.

Postconditions: parameters follow ``args`` (a handle with a buffer per tensor); intermediate
tensors are scratch buffers (`Allocate` + `DeclBuffer`) at the top of the body, or at the loop
they are computed at; the body holds only TIR (no TE nodes); loop variable names are unique.
"""

from __future__ import annotations

from typing import Any

from kiln.errors import IRError, IRValueError
from kiln.ir.names import NameSupply
from kiln.ir.visitor import distinct_nodes
from kiln.te.bound import infer_region, region_guards
from kiln.te.inline import buffer_readers, effective_bodies
from kiln.te.lower_loops import StageLoops, make_stage_loops
from kiln.te.lower_nest import allocate, build_stage
from kiln.te.prim_attach import nested_inside
from kiln.te.schedule import Schedule, Stage, create_schedule
from kiln.te.tensor import AxisVar, ComputeOp, Tensor
from kiln.tir.buffer import Buffer, decl_buffer
from kiln.tir.expr import Let, PrimExpr, Var, convert
from kiln.tir.function import PrimFunc
from kiln.tir.stmt import Stmt, seq


class LowerState:
    """What lowering one schedule accumulates: bodies, buffers, loops and used names."""

    def __init__(self, sch: Schedule) -> None:
        self.sch = sch
        self.bodies = effective_bodies(sch)
        self.readers = buffer_readers(sch, self.bodies)
        self.buffers: dict[Stage, Buffer] = {}
        self.params: set[Stage] = set()
        self.loops: dict[Stage, StageLoops] = {}
        self.loop_extents: dict[Var, PrimExpr] = {}
        self.children: dict[Stage, list[Stage]] = {s: [] for s in sch.stages}
        self._names = NameSupply()

    def fresh_name(self, base: str) -> str:
        """``base``, or ``base_1``, ``base_2``... if already used in this function."""
        return self._names.fresh(base)

    def region_min(self, stage: Stage) -> list[PrimExpr]:
        """Where the stage's buffer starts in tensor coordinates (zeros unless a tile)."""
        sl = self.loops.get(stage)
        if sl is None:
            return [convert(0, s.dtype) for s in stage.op.output(0).shape]
        return [lo for lo, _ in sl.region]


def _has_loops(stage: Stage) -> bool:
    return isinstance(stage.op, ComputeOp) and not stage.is_inlined


def _bind_args(state: LowerState, args: Any) -> tuple[list[Var], dict[Var, Buffer]]:
    if not isinstance(args, (list, tuple)):
        raise IRError(f"lower: args must be a list of tensors (and scalar Vars), got {args!r}")
    params: list[Var] = []
    bmap: dict[Var, Buffer] = {}
    for a in args:
        if isinstance(a, Tensor):
            stage = state.sch[a]
            if stage in state.params:
                raise IRValueError(f"lower: tensor {a.name!r} is listed twice in args")
            name = state.fresh_name(a.name)
            handle = Var(name, "handle")
            buf = decl_buffer(a.shape, a.dtype, name)
            params.append(handle)
            bmap[handle] = buf
            state.buffers[stage] = buf
            state.params.add(stage)
        elif isinstance(a, Var) and not isinstance(a, AxisVar):
            if a in params:
                raise IRValueError(f"lower: variable {a.name!r} is listed twice in args")
            params.append(a)
        else:
            raise IRError(f"lower: args must be tensors or scalar Vars, got {a!r}")
    return params, bmap


def _validate(state: LowerState, params: list[Var], bmap: dict[Var, Buffer]) -> None:
    sch = state.sch
    for stage in sch.stages:
        read = bool(state.readers[stage])
        if stage.is_placeholder and read and stage not in state.params:
            raise IRValueError(f"lower: input {stage.name!r} is read but not passed in args")
        if stage.is_output and stage not in state.params:
            raise IRValueError(f"lower: output {stage.name!r} must be passed in args")
        if stage in state.params and not stage.is_placeholder and stage.attach_type != "root":
            raise IRValueError(
                f"lower: {stage.name!r} is an argument, so it must be computed in full; it is "
                f"{'inlined' if stage.is_inlined else 'computed at another stage'}"
            )
        if stage.attach_type == "scope":
            _check_attach(state, stage)
    _check_free_vars(state, params, bmap)


def _check_attach(state: LowerState, stage: Stage) -> None:
    host = stage.attach_stage
    assert host is not None
    if host.is_inlined:
        raise IRValueError(
            f"compute_at: {stage.name!r} is computed at stage {host.name!r}, which is inlined"
        )
    readers = state.readers[stage]
    axis = stage.attach_ivar
    others = [r.name for r in readers if r is not host and not nested_inside(r, host, axis)]
    if host not in readers and (others or not readers):
        raise IRValueError(f"compute_at: stage {host.name!r} no longer reads {stage.name!r}")
    if others:
        raise IRValueError(
            f"compute_at: {stage.name!r} is computed inside {host.name!r} but also read by {others}"
        )


def _check_free_vars(state: LowerState, params: list[Var], bmap: dict[Var, Buffer]) -> None:
    bound = {id(p) for p in params}
    for buf in bmap.values():
        bound |= {id(d) for d in buf.shape if isinstance(d, Var)}
    for stage in state.sch.stages:
        if stage.is_inlined:
            continue
        things: list[Any] = list(stage.op.output(0).shape)
        if stage in state.bodies:
            things.append(state.bodies[stage])
        for k in getattr(stage.op, "reduce_axis", ()):
            things.append(k.dom)
        nodes = distinct_nodes(tuple(things))
        bound |= {id(n.var) for n in nodes if isinstance(n, Let)}  # bound inside the body
        for n in nodes:
            if isinstance(n, Var) and not isinstance(n, AxisVar) and id(n) not in bound:
                raise IRValueError(
                    f"lower: variable {n.name!r} used by {stage.name!r} is not bound; pass it "
                    "in args, or a tensor that has it as a dimension"
                )


def _plan(state: LowerState) -> None:
    """Regions, loops and buffers of every stage, consumers before producers."""
    stages = [s for s in state.sch.stages if _has_loops(s)]
    # names are handed out producers first, so the first stage keeps the plain names
    loop_names = {s: {a: state.fresh_name(a.name) for a in s.leaf_iter_vars} for s in stages}
    buf_names = {s: state.fresh_name(s.name) for s in stages if s not in state.params}
    for stage in reversed(stages):
        sl = make_stage_loops(stage, infer_region(state, stage), loop_names[stage])
        sl.guards += region_guards(state, sl)
        state.loops[stage] = sl
        for a in sl.leaves:
            state.loop_extents[sl.loop_vars[a]] = sl.extents[a]
        if stage not in state.params:
            shape = [ext for _, ext in sl.region]
            dtype = stage.op.output(0).dtype
            state.buffers[stage] = decl_buffer(shape, dtype, buf_names[stage], scope=stage.scope)
        if stage.attach_type == "scope":
            state.children[stage.attach_stage].insert(0, stage)  # type: ignore[index]


def _body(state: LowerState) -> Stmt:
    roots = [s for s in state.sch.stages if _has_loops(s) and s.attach_type == "root"]
    body = seq(*(build_stage(state, s) for s in roots))
    for s in reversed(roots):
        if s not in state.params:
            body = allocate(state.buffers[s], body)
    return body


def lower(
    sch: Schedule, args: Any, name: str = "main", attrs: dict[str, Any] | None = None
) -> PrimFunc:
    """The schedule as a PrimFunc taking ``args`` (tensors, then any scalar Vars), exposed as
    ``name``."""
    if not isinstance(sch, Schedule):
        raise IRError(f"lower: expected a Schedule (te.create_schedule), got {sch!r}")
    if not isinstance(name, str) or not name:
        raise IRError(f"lower: the function name must be a non-empty string, got {name!r}")
    state = LowerState(sch)
    params, bmap = _bind_args(state, args)
    _validate(state, params, bmap)
    _plan(state)
    fattrs = {"global_symbol": name, "tir.noalias": True, **(attrs or {})}
    return PrimFunc(tuple(params), _body(state), buffer_map=bmap, attrs=fattrs)


def create_prim_func(args: Any, name: str = "main") -> PrimFunc:
    """Lower the default schedule of ``args``: inputs and outputs (every compute listed is an
    output), as a PrimFunc exposed as ``name``."""
    if not isinstance(args, (list, tuple)):
        raise IRError(f"create_prim_func: expected a list of tensors, got {args!r}")
    outs = [t for t in args if isinstance(t, Tensor) and isinstance(t.op, ComputeOp)]
    if not outs:
        raise IRValueError(
            "create_prim_func: no compute tensor among the arguments (nothing to do)"
        )
    return lower(create_schedule(outs), args, name=name)
