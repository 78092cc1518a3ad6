"""From graph-level values to tensor expressions and back: what `BlockBuilder.call_te` and the
legalization of operators share.

`TEArgs.convert` turns relax arguments into TE values: a tensor-valued expression becomes a
``te.placeholder`` of its shape and dtype (its dims are the struct info's own `tir` expressions,
so symbolic dims stay the same variables), a tuple a list, a shape its dims, a prim value its
expression; anything else passes through. Index arithmetic is int32 when every shape is
constant and int64 otherwise (see `te_dims`). `prim_func_of` lowers the TE outputs into a
PrimFunc in destination-passing style: parameters are every tensor input (in argument order,
read or not), then the outputs, then the symbolic variables no input shape binds
(``tir_vars``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kiln import te
from kiln.errors import IRError
from kiln.ir.node import FrozenMap
from kiln.ir.visitor import pre_order_nodes
from kiln.relax.expr import (
    Constant,
    DataTypeImm,
    Expr,
    PrimValue,
    ShapeExpr,
    StringImm,
    Tuple,
    Var,
)
from kiln.relax.struct_info import INT64, TensorStructInfo, TupleStructInfo
from kiln.te.tensor import AxisVar, ComputeOp, PlaceholderOp
from kiln.tir.buffer import decl_buffer
from kiln.tir.expr import Cast, IntImm, Let, PrimExpr
from kiln.tir.expr import Var as TirVar
from kiln.tir.expr import const as tir_const
from kiln.tir.function import PrimFunc


def te_dims(dims: Any, wide: bool) -> tuple[Any, ...]:
    """Dims for TE. NOTE: TE needs one index dtype per computation: int32 (constants as Python
    ints, as `kiln.topi` expects) when every shape involved is constant, else int64 (the dtype
    of symbolic dims) throughout."""
    if wide:
        return tuple(dims)
    return tuple(d.value if isinstance(d, IntImm) else d for d in dims)


def has_symbolic_dims(*items: Any) -> bool:
    """Whether any struct info among ``items`` (expressions or struct infos) has a dim or value
    that is not a constant."""
    for item in items:
        sinfo = item.struct_info_ if isinstance(item, Expr) else item
        if isinstance(item, Tuple):
            if has_symbolic_dims(*item.fields):
                return True
            continue
        if isinstance(sinfo, TupleStructInfo):
            if has_symbolic_dims(*sinfo.fields):
                return True
            continue
        dims = getattr(sinfo, "dims", None) if isinstance(sinfo, TensorStructInfo) else None
        dims = getattr(sinfo, "values", None) if dims is None else dims
        value = getattr(sinfo, "value", None)
        if any(not isinstance(d, IntImm) for d in (dims or ())):
            return True
        if value is not None and not isinstance(value, IntImm) and value.dtype.is_integer:
            return True
    return False


class TEArgs:
    """Converts relax values to TE values, remembering each placeholder and its relax value."""

    def __init__(self, wide: bool) -> None:
        self.wide = wide
        self.inputs: list[tuple[Expr, te.Tensor]] = []
        self._by_expr: dict[int, te.Tensor] = {}

    def convert(self, value: Any) -> Any:
        if isinstance(value, Tuple):
            return [self.convert(f) for f in value.fields]
        if isinstance(value, ShapeExpr):
            return te_dims(value.values, self.wide)
        if isinstance(value, PrimValue):
            return value.value
        if isinstance(value, StringImm):
            return value.value
        if isinstance(value, DataTypeImm):
            return str(value.value)
        if isinstance(value, Expr):
            return self.tensor(value)
        if isinstance(value, list):
            return [self.convert(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self.convert(v) for v in value)
        if isinstance(value, dict):
            return {k: self.convert(v) for k, v in value.items()}
        return value

    def tensor(self, value: Expr) -> te.Tensor:
        sinfo = value.struct_info_
        if isinstance(sinfo, TupleStructInfo) and isinstance(value, Var):
            raise IRError(f"call_te: pass the fields of tuple {value.name_hint!r}, not the tuple")
        if not isinstance(sinfo, TensorStructInfo):
            raise IRError(f"call_te: {value!r} is not a tensor (struct info {sinfo})")
        if sinfo.dims is None or sinfo.dtype.is_void:
            raise IRError(f"call_te: {value!r} needs a known shape and dtype, has {sinfo}")
        hit = self._by_expr.get(id(value))
        if hit is not None:
            return hit
        if isinstance(value, Constant) and value.data.size == 1:
            return self.immediate(value)
        name = value.name_hint if isinstance(value, Var) else f"input{len(self.inputs)}"
        ph = te.placeholder(te_dims(sinfo.dims, self.wide), sinfo.dtype, name=name)
        self._by_expr[id(value)] = ph
        self.inputs.append((value, ph))
        return ph

    def immediate(self, value: Constant) -> te.Tensor:
        """A one-element constant as a compute of its value: inlined, the kernel reads an
        immediate (``x * 0.5f``, ``pow(x, 3.0f)``), not a buffer."""
        sinfo = value.struct_info_
        item = value.data.reshape(()).item()
        imm = tir_const(item, str(sinfo.dtype))  # type: ignore[union-attr]
        dims = te_dims(sinfo.dims, self.wide)  # type: ignore[union-attr]
        t = te.compute(dims, lambda *_: imm, name="constant", tag="elemwise")
        self._by_expr[id(value)] = t
        return t


def as_tensors(outs: Any) -> list[te.Tensor]:
    """The output tensors of a TE function's result (one tensor or a list/tuple)."""
    items = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    for t in items:
        if not isinstance(t, te.Tensor):
            raise IRError(f"call_te: the function must return te.Tensors, got {t!r}")
    return items


def to_int64(e: PrimExpr) -> PrimExpr:
    """A dim as an int64 expression."""
    if e.dtype == INT64:
        return e
    if isinstance(e, IntImm):
        return IntImm(INT64, e.value)
    return Cast(INT64, e)


def out_struct_info(outs: Sequence[te.Tensor]) -> Any:
    """Struct info of the outputs (a tuple of them for several)."""
    infos = [TensorStructInfo([to_int64(d) for d in t.shape], t.dtype) for t in outs]
    return infos[0] if len(infos) == 1 else TupleStructInfo(tuple(infos))


def _graph(outs: Sequence[te.Tensor]) -> tuple[list[te.Tensor], list[TirVar]]:
    """Placeholders the outputs read, and the free symbolic variables of the computation."""
    seen: set[int] = set()
    used: list[te.Tensor] = []
    found: dict[int, TirVar] = {}
    stack = list(outs)
    while stack:
        t = stack.pop()
        if id(t.op) in seen:
            continue
        seen.add(id(t.op))
        things: list[Any] = list(t.shape)
        if isinstance(t.op, PlaceholderOp):
            used.append(t)
        elif isinstance(t.op, ComputeOp):
            things.append(t.op.body)
            things.extend(k.dom for k in t.op.reduce_axis)
            stack.extend(t.op.input_tensors)
        nodes = list(pre_order_nodes(tuple(things)))
        local = {id(n.var) for n in nodes if isinstance(n, Let)}  # bound inside the body
        for n in nodes:
            if isinstance(n, TirVar) and not isinstance(n, AxisVar) and id(n) not in local:
                found.setdefault(id(n), n)
    return used, list(found.values())


def _shape_vars(t: te.Tensor) -> set[int]:
    return {id(d) for d in t.shape if isinstance(d, TirVar)}


def prim_func_of(
    inputs: Sequence[te.Tensor],
    outs: Sequence[te.Tensor],
    name: str,
    schedule: te.Schedule | None = None,
) -> tuple[PrimFunc, list[TirVar]]:
    """The private PrimFunc computing ``outs`` from ``inputs`` and its extra symbolic params;
    lowered with ``schedule`` when given (else TE's default, serial loops)."""
    used, free = _graph(outs)
    used_ids = {id(t) for t in used}
    read = [t for t in inputs if id(t) in used_ids]
    bound_by_read = set().union(*(_shape_vars(t) for t in read)) if read else set()
    bound_by_any = set().union(*(_shape_vars(t) for t in inputs)) if inputs else set()
    scalars = [v for v in free if id(v) not in bound_by_read]
    tir_vars = [v for v in free if id(v) not in bound_by_any]
    sch = schedule if schedule is not None else te.create_schedule(list(outs))
    lowered = te.lower(sch, [*read, *outs, *scalars], name=name)
    by_tensor = dict(zip(map(id, [*read, *outs]), lowered.params))
    params, bmap = [], dict(lowered.buffer_map)
    for t in [*inputs, *outs]:
        p = by_tensor.get(id(t))
        if p is None:
            p = TirVar(t.name, "handle")
            bmap[p] = decl_buffer(t.shape, t.dtype, t.name)
        params.append(p)
    params.extend(tir_vars)
    attrs = lowered.attrs.without("global_symbol")
    func = PrimFunc(tuple(params), lowered.body, lowered.ret_type, FrozenMap(bmap), attrs)
    return func, tir_vars
