"""Outlining a group of bindings of a dataflow block into a function of its own (what
`FuseOps` and `PartitionForCompiler` share).

`outline(graph, members, attrs)` builds a private function whose parameters are what the group
reads from outside (variables, and constant tensors, which become parameters too; with
``keep_scalars``, one-element constants stay in the body, where lowering makes them
immediates), whose body is
the group's bindings in one dataflow block, and whose result is every value of the group used
outside it (one value, or a tuple of them in binding order); its span is its first binding's.
It returns None when the group mentions a symbolic variable its parameters do not define;
with ``free_symbols`` (primitive functions) such variables become one last parameter instead,
``dims: R.Shape([seq, ...])``, and the call passes the caller's ``R.shape([seq, ...])`` (the
group of ``arange(0, seq)``, of an attention mask built from the caller's dims; `LowerTE`
passes them to the kernel as ``tir_vars``).

`call_bindings` gives the bindings that replace the group in the original block: the call,
bound to the original variable (one output) or to a new tuple variable followed by one item
binding per original variable, so the rest of the function keeps referring to the same
variables.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kiln.ir.function import GlobalVar
from kiln.relax.analysis.block_graph import BlockGraph
from kiln.relax.analysis.struct_info import tir_vars
from kiln.relax.binding import Binding, VarBinding
from kiln.relax.block_builder import BlockBuilder
from kiln.relax.expr import (
    Call,
    Constant,
    DataflowVar,
    Expr,
    Function,
    PrimValue,
    ShapeExpr,
    Tuple,
    TupleGetItem,
    Var,
)
from kiln.relax.struct_info import ShapeStructInfo, TensorStructInfo, TupleStructInfo


@dataclass(frozen=True)
class Outlined:
    """A group as a function: the function, its call's arguments and the variables it
    defines."""

    func: Function
    inputs: tuple[Expr, ...]
    outputs: tuple[Var, ...]


def _leaves(value: Any) -> list[Any]:
    out: list[Any] = []
    stack = [value]
    while stack:
        e = stack.pop()
        if isinstance(e, Call):
            stack.extend(reversed(e.args))
        elif isinstance(e, Tuple):
            stack.extend(reversed(e.fields))
        elif isinstance(e, TupleGetItem):
            stack.append(e.tuple_value)
        else:
            out.append(e)
    return out


def substitute(e: Any, remap: dict[int, Expr]) -> Any:
    """``e`` (a normalized binding value) with variables and constants replaced by ``remap``."""
    if id(e) in remap:
        return remap[id(e)]
    if isinstance(e, Call):
        args = tuple(substitute(a, remap) for a in e.args)
        if all(a is b for a, b in zip(args, e.args)):
            return e
        return replace(e, args=args, struct_info_=None)
    if isinstance(e, Tuple):
        fields = tuple(substitute(f, remap) for f in e.fields)
        return e if all(a is b for a, b in zip(fields, e.fields)) else Tuple(fields, None, e.span)
    if isinstance(e, TupleGetItem):
        tup = substitute(e.tuple_value, remap)
        return e if tup is e.tuple_value else TupleGetItem(tup, e.index, None, e.span)
    return e


def is_scalar_constant(e: Any) -> bool:
    """A constant tensor of one element (a scale, an epsilon, an exponent)."""
    return isinstance(e, Constant) and e.data.size == 1


def group_inputs(graph: BlockGraph, members: list[int], keep_scalars: bool = False) -> list[Expr]:
    """What the group reads from outside: variables and constant tensors, by first use
    (one-element constants stay inside with ``keep_scalars``)."""
    defined = {id(graph.bindings[m].var) for m in members}
    seen: set[int] = set()
    out: list[Expr] = []
    for m in members:
        for leaf in _leaves(graph.bindings[m].value):
            ok = isinstance(leaf, Var) or (
                isinstance(leaf, Constant) and isinstance(leaf.struct_info_, TensorStructInfo)
            )
            if keep_scalars and is_scalar_constant(leaf):
                continue
            if ok and id(leaf) not in defined and id(leaf) not in seen:
                seen.add(id(leaf))
                out.append(leaf)
    return out


def group_outputs(graph: BlockGraph, members: list[int]) -> list[int]:
    """The members whose values are used outside the group."""
    inside = set(members)
    return [
        m for m in members if graph.escapes[m] or any(c not in inside for c in graph.consumers[m])
    ]


def _undefined_symbols(params: list[Var], graph: BlockGraph, members: list[int]) -> list[Any]:
    """The symbolic variables the group uses that no parameter's struct info defines, by first
    use."""
    defined = {id(v) for p in params for v in tir_vars(p.struct_info_)}
    out: list[Any] = []
    for m in members:
        b = graph.bindings[m]
        used = tir_vars(b.var.struct_info_)
        for leaf in _leaves(b.value):
            if isinstance(leaf, (ShapeExpr, PrimValue)):
                used += tir_vars(leaf.values if isinstance(leaf, ShapeExpr) else leaf.value)
        if isinstance(b.value, Call):
            used += tir_vars(b.value.sinfo_args)
        for v in used:
            if id(v) not in defined:
                defined.add(id(v))
                out.append(v)
    return out


def outline(
    graph: BlockGraph,
    members: list[int],
    attrs: dict[str, Any],
    keep_scalars: bool = False,
    free_symbols: bool = False,
) -> Outlined | None:
    """The group ``members`` as a private function with ``attrs`` (see the module docstring)."""
    inputs = group_inputs(graph, members, keep_scalars)
    outputs = group_outputs(graph, members)
    if not outputs:
        return None
    params = [
        Var(x.name_hint if isinstance(x, Var) else f"c{k}", x.struct_info_)
        for k, x in enumerate(inputs)
    ]
    missing = _undefined_symbols(params, graph, members)
    if missing and not free_symbols:
        return None
    if missing:  # the caller's dims, passed as one shape value
        inputs.append(ShapeExpr(missing))
        params.append(Var("dims", ShapeStructInfo(tuple(missing))))
    remap: dict[int, Expr] = {id(x): p for x, p in zip(inputs, params)}
    bb = BlockBuilder()
    single = outputs[0] if len(outputs) == 1 and outputs[0] == members[-1] else None
    with bb.function("outlined", params, attrs=attrs, private=True):
        with bb.dataflow():
            for m in members:
                b = graph.bindings[m]
                value = substitute(b.value, remap)
                emit = bb.emit_output if m == single else bb.emit
                remap[id(b.var)] = emit(value, b.var.name_hint)
            if single is None:
                outs = [remap[id(graph.bindings[m].var)] for m in outputs]
                result = bb.emit_output(outs[0] if len(outs) == 1 else Tuple(tuple(outs)))
            else:
                result = remap[id(graph.bindings[single].var)]
        gv = bb.emit_func_output(result)
    func = bb.get()[gv]
    assert isinstance(func, Function)
    first = graph.bindings[members[0]]
    func = replace(func, span=first.span or first.value.span)  # where the fused code starts
    defined = tuple(graph.bindings[m].var for m in outputs)
    return Outlined(func, tuple(inputs), defined)


def call_bindings(gv: GlobalVar, out: Outlined, dataflow: bool) -> list[Binding]:
    """The bindings that replace an outlined group: its call, and one item binding per output
    when there are several (see the module docstring)."""
    call = Call(gv, out.inputs)
    if len(out.outputs) == 1:
        var = out.outputs[0]
        object.__setattr__(call, "struct_info_", var.struct_info_)
        return [VarBinding(var, call)]
    sinfo = TupleStructInfo(tuple(v.struct_info_ for v in out.outputs))
    object.__setattr__(call, "struct_info_", sinfo)
    tup = (DataflowVar if dataflow else Var)("t", sinfo)
    items: list[Binding] = [VarBinding(tup, call)]
    for k, v in enumerate(out.outputs):
        item = TupleGetItem(tup, k)
        object.__setattr__(item, "struct_info_", v.struct_info_)
        items.append(VarBinding(v, item))
    return items
