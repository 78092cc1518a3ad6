"""HoistDimsOnly: values that depend only on the model's dims are computed once per dims.

A model with symbolic dims computes, on every call, values no input's *data* reaches: the
causal mask and position ids a transformers export builds from ``arange(seq)``, ``ones((batch,
seq))`` and ``cumsum``, rotary sin/cos tables. With the dims fixed `FoldConstant` folds them at
compile time; with symbolic dims they are kernels on every call (a fifth of a dynamic GPT-2's
time at sequence 64).

In each graph function with symbolic dims (not primitive, external or ``Compiler``), the
bindings of a dataflow block that are pure operator calls (with a legalization) reading only
constants, prim values and shapes of the function's parameter dims, and other such bindings,
move to a new private function ``<name>_dims_only(dims: R.Shape([...]))`` that returns those of
them the rest of the block reads, as a tuple. The block calls it through
``vm.builtin.call_memoized(<name>_dims_only, R.shape([...]))`` (the VM passes its context),
which runs it the first
time the dims take those values and returns the remembered tuple after (the VM keeps the last
results, `kiln/runtime/vm_c/builtins.c`). A function whose result is such a value is left alone
(the caller could write the remembered tensor), and so is a block where nothing but
constant-free shape reads would move.

A match cast of such a value to dims the parameters define moves with it (its check depends on
the dims only). Postcondition: no binding left in a dataflow block reads only dims and
constants, except what the function returns.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.transform import Pass, PassContext
from kiln.relax.analysis.block_graph import value_vars
from kiln.relax.analysis.primitive import is_lowerable
from kiln.relax.analysis.struct_info import tir_vars
from kiln.relax.binding import BindingBlock, DataflowBlock, MatchCast, VarBinding
from kiln.relax.block_builder import BlockBuilder
from kiln.relax.expr import (
    Call,
    ExternFunc,
    Function,
    SeqExpr,
    ShapeExpr,
    Tuple,
    TupleGetItem,
    Var,
)
from kiln.relax.op.registry import find_op_def
from kiln.relax.outline import substitute
from kiln.relax.struct_info import ShapeStructInfo, TensorStructInfo, TupleStructInfo

MEMOIZED = "vm.builtin.call_memoized"


def _dims_only(b: Any, hoisted: set[int], defined: set[int]) -> bool:
    """Whether binding ``b`` computes a tensor from constants, dims and hoisted values only
    (or match-casts a hoisted value to dims the parameters define)."""
    if isinstance(b, MatchCast):
        return id(b.value) in hoisted and all(id(v) in defined for v in tir_vars(b.struct_info))
    if not isinstance(b, VarBinding) or not isinstance(b.value, Call):
        return False
    rec = find_op_def(b.value.op)
    if rec is None or rec.legalize is None or not rec.pure:
        return False
    if not isinstance(b.var.struct_info_, TensorStructInfo):
        return False
    if any(id(v) not in hoisted for v in value_vars(b.value)):
        return False
    return all(id(v) in defined for v in tir_vars((b.var.struct_info_, b.value)))


def _returned(func: Function) -> set[int]:
    body = func.body
    result = body.body if isinstance(body, SeqExpr) else body
    fields = result.fields if isinstance(result, Tuple) else (result,)
    return {id(f) for f in fields if isinstance(f, Var)}


class _Hoister:
    def __init__(self, builder: BlockBuilder, name: str, func: Function) -> None:
        self.builder = builder
        self.name = name
        self.func = func
        self.defined = {id(v) for p in func.params for v in tir_vars(p.struct_info_)}
        self.returned = _returned(func)

    def run(self) -> Function | None:
        body = self.func.body
        if not isinstance(body, SeqExpr) or not self.defined:
            return None
        blocks = [new for b in body.blocks for new in self.blocks(b)]
        if len(blocks) == len(body.blocks):
            return None
        return replace(self.func, body=replace(body, blocks=tuple(blocks)))

    def blocks(self, block: BindingBlock) -> list[BindingBlock]:
        """``block``, or the memoized call's block followed by what is left of ``block``."""
        if not isinstance(block, DataflowBlock):
            return [block]
        members, hoisted = [], set()
        for b in block.bindings:
            if _dims_only(b, hoisted, self.defined):
                members.append(b)
                hoisted.add(id(b.var))
        if not members or hoisted & self.returned or any(type(b.var) is Var for b in members):
            return [block]  # NOTE: a value the block exports would need renaming beyond it
        kept = [b for b in block.bindings if id(b.var) not in hoisted]
        used = {id(v) for b in kept for v in value_vars(b.value)}
        outs = [b.var for b in members if id(b.var) in used]
        if not outs:
            return [block]
        pre, remap = self.memoized(members, outs)
        rest = [replace(b, value=self.builder.normalize(substitute(b.value, remap))) for b in kept]
        return [BindingBlock(tuple(pre), None), DataflowBlock(tuple(rest), block.span)]

    def memoized(
        self, bindings: list[Any], outs: list[Var]
    ) -> tuple[list[VarBinding], dict[int, Any]]:
        """The bindings calling the outlined function through the memo, and the variables
        that replace ``outs``."""
        dims = tir_vars(tuple((b.var.struct_info_, b.value) for b in bindings))
        gv = self.outline(bindings, outs, dims)
        sinfo = TupleStructInfo(tuple(v.struct_info_ for v in outs))
        # NOTE: a plain call: the codegen passes the VM context to a builtin that takes it
        call = Call(ExternFunc(MEMOIZED), (gv, ShapeExpr(dims)), sinfo_args=(sinfo,))
        object.__setattr__(call, "struct_info_", sinfo)
        tup = Var("dims_only", sinfo)
        pre = [VarBinding(tup, call)]
        remap: dict[int, Any] = {}
        for k, v in enumerate(outs):
            item = TupleGetItem(tup, k)
            object.__setattr__(item, "struct_info_", v.struct_info_)
            new = Var(v.name_hint, v.struct_info_)
            pre.append(VarBinding(new, item))
            remap[id(v)] = new
        return pre, remap

    def outline(self, bindings: list[Any], outs: list[Var], dims: list[Any]) -> GlobalVar:
        param = Var("dims", ShapeStructInfo(tuple(dims)))
        bb = BlockBuilder()
        remap: dict[int, Any] = {}
        with bb.function("dims_only", [param], private=True):
            with bb.dataflow():
                for b in bindings:
                    value = substitute(b.value, remap)
                    remap[id(b.var)] = (
                        bb.match_cast(value, b.struct_info, b.var.name_hint)
                        if isinstance(b, MatchCast)
                        else bb.emit(value, b.var.name_hint)
                    )
                result = bb.emit_output(Tuple(tuple(remap[id(v)] for v in outs)))
            gv = bb.emit_func_output(result)
        func = bb.get()[gv]
        assert isinstance(func, Function)
        return self.builder.add_func(func, f"{self.name}_dims_only")


@dataclass(frozen=True)
class HoistDimsOnly(Pass):
    """Compute values that depend only on dims once per dims (see the module docstring)."""

    name: ClassVar[str] = "hoist-dims-only"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        changed: dict[GlobalVar, Function] = {}
        builder = BlockBuilder(mod)
        for gv, func in list(mod.items()):
            if isinstance(func, Function) and is_lowerable(func):
                new = _Hoister(builder, gv.name_hint, func).run()
                if new is not None:
                    changed[gv] = new
        if not changed:
            return mod
        return builder.get().update_all(changed)


__all__ = ["HoistDimsOnly"]
