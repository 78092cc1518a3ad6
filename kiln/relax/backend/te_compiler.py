"""From a primitive graph function to a scheduled PrimFunc through TE, and its shape function.

`lower_primitive(func, target, name)`: every binding of the primitive's body is an operator
call; each becomes TE through its record's legalization (or, for a CPU target, the operator
library's CPU compute of the same values where `strategy` has one), composed over the tensors of
the earlier bindings; the outputs are scheduled by `kiln.topi.schedule_for` for the target (the
anchor's schedule with its injective producers and consumers inlined) and lowered to one
private PrimFunc in destination-passing style: the tensor parameters, then the outputs.

`shape_function(func, name)`: for a function whose result shape is not known from its
parameters' struct info alone, a host PrimFunc computing the result dims at run time. Each
parameter contributes one 1-D int64 buffer: a tensor its shape (state `SHAPE_FN_SHAPE`), a
shape or integer value its data (`SHAPE_FN_DATA`); dims unknown there become fresh symbolic
variables read from that buffer, the body is normalized again over them (the operator records'
inference gives the dims as expressions of those variables), and each output gets one 1-D int64
buffer to fill.

Errors are `PassError`s naming the function, the operator and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kiln import config, te, topi
from kiln.errors import IRError, IRValueError, PassError
from kiln.ir.target import Target
from kiln.relax.analysis.struct_info import tir_vars
from kiln.relax.backend.strategy import compute_for
from kiln.relax.binding import Binding, MatchCast
from kiln.relax.block_builder import BlockBuilder
from kiln.relax.expr import Call, Function, SeqExpr, Tuple, TupleGetItem, Var, op_name
from kiln.relax.op.builtin import SHAPE_FN_DATA, SHAPE_FN_SHAPE
from kiln.relax.op.registry import OpDef, find_op_def
from kiln.relax.outline import substitute
from kiln.relax.struct_info import (
    INT64,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
    is_te_ready,
)
from kiln.relax.te_bridge import TEArgs, has_symbolic_dims, prim_func_of
from kiln.tir.analysis.rebind import fresh_copy
from kiln.tir.attrs import TARGET
from kiln.tir.buffer import decl_buffer
from kiln.tir.expr import BufferLoad, IntImm, PrimExpr
from kiln.tir.expr import Var as TirVar
from kiln.tir.function import PrimFunc
from kiln.tir.stmt import BufferStore, LetStmt, Stmt, seq
from kiln.topi.tag import Pattern

PASS = "lower-te"


def _fail(where: str, message: str, node: Any = None) -> PassError:
    return PassError(PASS, f"{where}: {message}", node)


def body_bindings(func: Function, where: str) -> list[Binding]:
    """The bindings of a primitive function's body (one sequence, no branches)."""
    body = func.body
    if not isinstance(body, SeqExpr):
        return []
    out: list[Binding] = []
    for block in body.blocks:
        out.extend(block.bindings)
    return out


def op_records(func: Function, where: str) -> list[OpDef]:
    """The operator records of a primitive's calls, in order; raises a `PassError` naming the
    call and the fix for anything TE cannot compute."""
    recs: list[OpDef] = []
    for b in body_bindings(func, where):
        v = b.value
        if isinstance(b, MatchCast):
            raise _fail(
                where,
                f"R.match_cast of {b.var.name_hint!r} inside a primitive "
                "function; fix: cast before calling it",
                b,
            )
        if isinstance(v, (Var, Tuple, TupleGetItem)):
            continue
        if not isinstance(v, Call):
            raise _fail(
                where,
                f"{type(v).__name__} bound to {b.var.name_hint!r} cannot be "
                "computed in TE; fix: keep it out of primitive functions",
                b,
            )
        rec = find_op_def(v.op)
        if rec is None:
            raise _fail(
                where,
                f"the call of {op_name(v.op)} bound to {b.var.name_hint!r} is opaque (not an "
                "operator); fix: call it outside the primitive function (FuseOps only groups "
                "operator calls)",
                b,
            )
        if rec.legalize is None:
            how = f" ({rec.lowered_by})" if rec.lowered_by else ""
            raise _fail(
                where,
                f"operator {rec.name} has no legalization{how}; fix: give its record in "
                f"{rec.family} a legalize function, or call it outside primitive functions",
                b,
            )
        recs.append(rec)
    opaque = [r for r in recs if r.pattern == Pattern.OPAQUE]
    if opaque and len(recs) > 1:
        raise _fail(
            where,
            f"opaque operator {opaque[0].name} is fused with {len(recs) - 1} other "
            "operator(s); fix: give it a primitive function of its own (FuseOps never fuses "
            "an opaque operator)",
        )
    return recs


def op_names(func: Function) -> list[str]:
    """Short names of the operators a primitive calls (``add``, ``conv2d``), in order."""
    names = []
    for b in body_bindings(func, ""):
        rec = find_op_def(getattr(b.value, "op", None))
        if rec is not None:
            names.append(rec.name.rsplit(".", 1)[-1])
    return names


# -- primitive -> PrimFunc ---------------------------------------------------------------------
def is_dims_param(p: Var) -> bool:
    """A primitive's ``dims: R.Shape([n, ...])`` parameter: symbolic variables of its caller
    that no tensor parameter's shape defines (`kiln.relax.outline`)."""
    s = p.struct_info_
    return (
        isinstance(s, ShapeStructInfo)
        and s.values is not None
        and all(isinstance(v, TirVar) for v in s.values)
    )


class _TEBuilder:
    """The TE values of a primitive's variables, built binding by binding."""

    def __init__(self, func: Function, target: Target, where: str) -> None:
        self.target, self.where = target, where
        bindings = body_bindings(func, where)
        values = [b.value for b in bindings] + [func.body.body, *func.params]
        self.conv = TEArgs(has_symbolic_dims(*values))
        self.env: dict[int, Any] = {}
        result = func.body.body if isinstance(func.body, SeqExpr) else func.body
        self.results = {id(v) for v in (result.fields if isinstance(result, Tuple) else [result])}
        for p in func.params:
            if is_dims_param(p):
                continue  # the caller's dims: the kernel takes them as scalars (`tir_vars`)
            if not isinstance(p.struct_info_, TensorStructInfo):
                raise _fail(
                    where,
                    f"parameter {p.name_hint!r} is {p.struct_info_}; a primitive "
                    "function takes tensors only",
                    p,
                )
            try:
                self.env[id(p)] = self.conv.tensor(p)
            except IRError as e:
                raise _fail(where, f"{e}; fix: match_cast the argument to a known shape") from e
        for b in bindings:
            self.env[id(b.var)] = self.value(b.value, b)

    def arg(self, e: Any) -> Any:
        if id(e) in self.env:
            return self.env[id(e)]
        if isinstance(e, Tuple):
            return [self.arg(f) for f in e.fields]
        return self.conv.convert(e)

    def value(self, v: Any, b: Any) -> Any:
        if isinstance(v, TupleGetItem):
            return self.arg(v.tuple_value)[v.index]
        if not isinstance(v, Call):
            return self.arg(v)
        rec = find_op_def(v.op)
        assert rec is not None and rec.legalize is not None
        if v.struct_info_ is None or not is_te_ready(v.struct_info_):
            raise _fail(
                self.where,
                f"{rec.name} bound to {b.var.name_hint!r} has unknown shape "
                f"({v.struct_info_}); fix: match_cast its operands",
                b,
            )
        try:
            args = [self.arg(a) for a in v.args]
            return compute_for(rec, v, args, self.target, id(b.var) not in self.results)
        except (IRError, IRValueError) as e:
            raise _fail(self.where, f"{rec.name} bound to {b.var.name_hint!r}: {e}", b) from e

    def outputs(self, result: Any) -> list[te.Tensor]:
        value = self.arg(result)
        outs = list(value) if isinstance(value, (list, tuple)) else [value]
        for t in outs:
            if not isinstance(t, te.Tensor) or not isinstance(t.op, te.ComputeOp):
                raise _fail(
                    self.where,
                    "returns a parameter (or a value not computed in it); "
                    "fix: return computed values only",
                )
        if len({id(t) for t in outs}) != len(outs):
            raise _fail(self.where, "returns the same value twice; fix: return it once")
        return outs


def _schedule(outs: list[te.Tensor], target: Target, name: str) -> te.Schedule:
    """The target's default schedule of ``outs``; TE's plain schedule (serial loops, named by a
    remark) when the operator library cannot schedule them."""
    try:
        return topi.schedule_for(outs, target)
    except IRError as e:
        # NOTE: kiln.topi's reduction schedule fails on int64 index arithmetic (symbolic shapes
        # with a reduction split into lanes); the kernel is still correct unscheduled.
        config.remark(f"LowerTE: {name} left unscheduled (serial loops): {e}")
        return te.create_schedule(outs)


def symbolic_vars(func: Function) -> list[TirVar]:
    """The symbolic variables of ``func``'s struct info (parameters, then bindings), by first
    occurrence: equal functions list corresponding variables at the same positions."""
    sinfos: list[Any] = [p.struct_info_ for p in func.params]
    sinfos += [b.var.struct_info_ for b in body_bindings(func, "")]
    return tir_vars(tuple(sinfos))


def lower_primitive(
    func: Function, target: Target, name: str, where: str
) -> tuple[PrimFunc, list[int]]:
    """The scheduled PrimFunc ``name`` of primitive ``func`` (see the module docstring), and the
    positions in `symbolic_vars` of the variables it takes after its tensors (``tir_vars``:
    those no parameter's shape binds, e.g. ``n`` when a parameter is ``(n * 2, 32)``)."""
    op_records(func, where)
    tb = _TEBuilder(func, target, where)
    outs = tb.outputs(func.body.body if isinstance(func.body, SeqExpr) else func.body)
    inputs = [ph for _, ph in tb.conv.inputs]
    prim, tir_vars_ = prim_func_of(inputs, outs, name, schedule=_schedule(outs, target, name))
    known = {id(v): k for k, v in enumerate(symbolic_vars(func))}
    unknown = [v.name for v in tir_vars_ if id(v) not in known]
    if unknown:
        raise _fail(
            where,
            f"its result uses symbolic variables ({', '.join(unknown)}) that none of its "
            "parameters' struct info mentions; fix: pass them as tensor dims, or match_cast "
            "the result",
        )
    # NOTE: a fresh copy: the TE placeholders' symbolic dims are the graph function's own
    # variables, and a PrimFunc binds variables of its own.
    prim = fresh_copy(prim)
    prim = replace(prim, attrs=prim.attrs.with_item(TARGET, str(target)), span=func.span)
    return prim, [known[id(v)] for v in tir_vars_]


# -- shape functions -----------------------------------------------------------------------------
@dataclass(frozen=True)
class ShapeFunc:
    """A host shape function and how to call it (see `kiln.relax.op.builtin.call_lowered`)."""

    prim: PrimFunc
    states: tuple[int, ...]
    num_inputs: int
    num_outputs: int


def is_dynamic(sinfo: StructInfo | None) -> bool:
    """Whether a result's shape is unknown from its struct info (some tensor has no dims)."""
    if isinstance(sinfo, TensorStructInfo):
        return sinfo.dims is None
    if isinstance(sinfo, TupleStructInfo):
        return any(is_dynamic(f) for f in sinfo.fields)
    return False


def _int64_buffer(n: int, name: str) -> Any:
    return decl_buffer((IntImm(INT64, n),), "int64", name)


def _fresh_dims(n: int, prefix: str) -> list[PrimExpr]:
    return [TirVar(f"{prefix}{k}", INT64) for k in range(n)]


class _ShapeParams:
    """The shape function's buffers, the symbolic dims they define, and the re-typed params."""

    def __init__(self, func: Function, where: str) -> None:
        self.params: list[Var] = []
        self.buffers: list[Any] = []
        self.states: list[int] = []
        self.binds: dict[TirVar, PrimExpr] = {}
        for p in func.params:
            self.add(p, where)

    def add(self, p: Var, where: str) -> None:
        s = p.struct_info_
        if isinstance(s, TensorStructInfo) and s.ndim >= 0:
            dims = list(s.dims) if s.dims is not None else _fresh_dims(s.ndim, f"{p.name_hint}_d")
            sinfo: StructInfo = TensorStructInfo(dims, s.dtype)
            state, buf = SHAPE_FN_SHAPE, _int64_buffer(len(dims), f"{p.name_hint}_shape")
        elif isinstance(s, ShapeStructInfo) and s.ndim >= 0:
            dims = list(s.values) if s.values is not None else _fresh_dims(s.ndim, p.name_hint)
            sinfo, state = ShapeStructInfo(dims), SHAPE_FN_DATA
            buf = _int64_buffer(len(dims), f"{p.name_hint}_data")
        elif isinstance(s, PrimStructInfo) and s.dtype.is_integer:
            value = s.value if s.value is not None else TirVar(p.name_hint, s.dtype)
            dims, sinfo, state = [value], PrimStructInfo(s.dtype, value), SHAPE_FN_DATA
            buf = _int64_buffer(1, f"{p.name_hint}_data")
        else:
            raise _fail(
                where,
                f"parameter {p.name_hint!r} ({s}) has no known rank; a shape "
                "function needs one; fix: annotate its ndim",
                p,
            )
        for axis, d in enumerate(dims):
            if isinstance(d, TirVar) and d not in self.binds:
                self.binds[d] = BufferLoad(buf, (IntImm(INT64, axis),))
        self.params.append(Var(p.name_hint, sinfo))
        self.buffers.append(buf)
        self.states.append(state)


def _reinfer(func: Function, params: list[Var], where: str) -> StructInfo:
    """The struct info of ``func``'s result when its parameters are ``params``."""
    remap: dict[int, Any] = {id(a): b for a, b in zip(func.params, params)}
    bb = BlockBuilder()
    try:
        with bb.function("shape", params):
            for b in body_bindings(func, where):
                remap[id(b.var)] = bb.emit(substitute(b.value, remap), b.var.name_hint)
            result = substitute(
                func.body.body if isinstance(func.body, SeqExpr) else func.body, remap
            )
            gv = bb.emit_func_output(result)
    except (IRError, IRValueError) as e:
        raise _fail(where, f"its result shape cannot be inferred: {e}") from e
    out = bb.get()[gv]
    assert isinstance(out, Function) and out.ret_struct_info is not None
    return out.ret_struct_info


def shape_function(func: Function, name: str, host: Target, where: str) -> ShapeFunc:
    """The host shape function ``name`` of ``func`` (see the module docstring)."""
    sp = _ShapeParams(func, where)
    ret = _reinfer(func, sp.params, where)
    fields = ret.fields if isinstance(ret, TupleStructInfo) else (ret,)
    outs, stores = [], []
    for k, f in enumerate(fields):
        if not isinstance(f, TensorStructInfo) or f.dims is None:
            raise _fail(
                where,
                f"output {k} ({f}) has a shape that depends on data the "
                "operators' inference cannot see; fix: match_cast the result",
            )
        buf = _int64_buffer(len(f.dims), f"out{k}_shape")
        outs.append(buf)
        for axis, d in enumerate(f.dims):
            free = [v for v in tir_vars(d) if v not in sp.binds]
            if free:
                raise _fail(
                    where,
                    f"output {k} dim {axis} uses {free[0].name}, which no "
                    "parameter's shape defines; fix: match_cast the result",
                )
            stores.append(BufferStore(buf, d, (IntImm(INT64, axis),)))
    body: Stmt = seq(*stores)
    for var, load in reversed(list(sp.binds.items())):
        body = LetStmt(var, load, body)
    handles = [TirVar(b.name, "handle") for b in [*sp.buffers, *outs]]
    bmap = dict(zip(handles, [*sp.buffers, *outs]))
    prim = PrimFunc(
        tuple(handles), body, buffer_map=bmap, attrs={TARGET: str(host)}, span=func.span
    )
    return ShapeFunc(prim, tuple(sp.states), len(sp.params), len(outs))
