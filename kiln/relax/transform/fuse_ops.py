"""FuseOps: group operator calls by fusion pattern into primitive functions.

Within each dataflow block, calls of operators whose record has a legalization (and whose
shapes are known) are grouped by the records' `Pattern`:

- element-wise, broadcast and injective calls chain together (an injective group);
- a reduction joins the injective group(s) producing its operands and ends its group;
- an out-element-wise-fusable anchor (``matmul``, ``conv2d``) starts a group and takes its
  element-wise / broadcast epilogue (bias, activation, residual add), as long as each value
  the epilogue reads from the group is used only inside it (the anchor's result is written
  once; an element-wise binding that reads only the group counts as inside, as it joins
  next: the diamonds of SiLU ``x * sigmoid(x)`` and GELU) and is not broadcast to a larger
  shape (the anchor would be computed again per element);
- an opaque operator is a group of its own; a group never holds two anchors (or an anchor and
  a reduction), and never joins across a binding that is not in it (which would make a cycle);
- a group holds at most `MAX_FUSED_OPS` operators (a long chain becomes several groups).

Each group becomes a private global function with attribute ``Primitive=1`` named
``fused_<op>_<op>...`` from its operators in order, and the group's bindings become one call
of it (see `kiln.relax.outline`). Constant tensors the group reads become parameters,
except one-element ones (scales, epsilons, exponents): they stay in the body, and the kernel
reads them as immediates.
Other bindings (calls of functions, ``call_tir``, tuples) stay as they are; bindings outside
dataflow blocks are not fused. With ``KILN_DEBUG=1`` every fusion that was refused is named
with its reason.

Postcondition: every module-level function that is not itself primitive, external or a
``Compiler`` function has had its dataflow blocks grouped; the block's other bindings keep
their variables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kiln import config
from kiln.ir.module import IRModule
from kiln.ir.transform import Pass, PassContext
from kiln.relax.analysis.block_graph import BlockGraph, Groups
from kiln.relax.analysis.free_vars import use_counts
from kiln.relax.analysis.primitive import PRIMITIVE, fused_name, is_lowerable
from kiln.relax.analysis.struct_info import static_dims
from kiln.relax.binding import BindingBlock, DataflowBlock
from kiln.relax.expr import Call, Expr, Function, Tuple, TupleGetItem, Var
from kiln.relax.expr_functor import ExprMutator
from kiln.relax.op.registry import OpDef, find_op_def
from kiln.relax.outline import call_bindings, outline
from kiln.relax.struct_info import TensorStructInfo, TupleStructInfo, is_te_ready
from kiln.topi.tag import Pattern

MAX_FUSED_OPS = 256
"""The most operators one group holds. NOTE: lowering a group inlines each stage's expanded body
into the next, so its cost grows with the square of the group's length; a 2,000-op chain as one
group took minutes to compile, as groups of 256 it takes seconds."""


def op_short_name(rec: OpDef) -> str:
    """``relax.nn.conv2d`` -> ``conv2d``."""
    return rec.name.rsplit(".", 1)[-1]


def _arg_ok(arg: Any) -> bool:
    if isinstance(arg, Tuple):
        return all(_arg_ok(f) for f in arg.fields)
    sinfo = arg.struct_info_ if isinstance(arg, Expr) else None
    if isinstance(arg, Var) and isinstance(sinfo, TupleStructInfo):
        return False  # TE takes a tuple's fields one by one (LegalizeOps does that)
    return not isinstance(sinfo, (TensorStructInfo, TupleStructInfo)) or is_te_ready(sinfo)


def fusable_record(value: Any) -> OpDef | None:
    """The record of a call that can be fused (a pure operator with a legalization, known
    shapes), else None."""
    if not isinstance(value, Call):
        return None
    rec = find_op_def(value.op)
    if rec is None or rec.legalize is None or not rec.pure:
        return None
    if not is_te_ready(value.struct_info_) or not all(_arg_ok(a) for a in value.args):
        return None
    return rec


@dataclass
class _Summary:
    """What a group holds, for the fusion rules."""

    anchor: bool = False
    reduce: bool = False
    opaque: bool = False
    names: list[str] = field(default_factory=list)

    def merged(self, other: _Summary) -> _Summary:
        return _Summary(
            self.anchor or other.anchor,
            self.reduce or other.reduce,
            self.opaque or other.opaque,
            self.names + other.names,
        )


class _BlockFuser:
    """Groups the bindings of one dataflow block (see the module docstring)."""

    def __init__(self, graph: BlockGraph) -> None:
        self.graph = graph
        self.groups = Groups(graph)
        self.pattern: list[Pattern | None] = []
        self.summary: dict[int, _Summary] = {}
        for b in graph.bindings:
            rec = fusable_record(b.value)
            tgi = isinstance(b.value, TupleGetItem)
            self.pattern.append(rec.pattern if rec is not None else None)
            if tgi and isinstance(b.value.tuple_value, Var):
                self.pattern[-1] = Pattern.INJECTIVE
        self.names = [
            op_short_name(r) if (r := fusable_record(b.value)) else "" for b in graph.bindings
        ]

    def run(self) -> list[list[int]]:
        for i, pat in enumerate(self.pattern):
            if pat is None:
                continue
            is_item = isinstance(self.graph.bindings[i].value, TupleGetItem)
            if is_item and not self._grouped_producer(i):
                continue
            self.groups.start(i)
            self.summary[i] = _Summary(
                pat == Pattern.OUT_ELEMWISE_FUSABLE,
                pat == Pattern.COMM_REDUCE,
                pat == Pattern.OPAQUE,
                [self.names[i]] if self.names[i] else [],
            )
            self._join_producers(i, pat)
            if is_item and self.groups.members(i) == [i]:
                # NOTE: an item its tuple's group refused stays a plain binding: as a group of
                # its own it would make the whole tuple a parameter of its consumers' group.
                self.groups.grouped[i] = False
        return [g for g in self.groups.groups() if any(self.names[m] for m in g)]

    def _grouped_producer(self, i: int) -> bool:
        return any(self.groups.grouped[p] for p in self.graph.producers[i])

    def _join_producers(self, i: int, pat: Pattern) -> None:
        roots: list[int] = []
        for p in self.graph.producers[i]:
            if self.groups.grouped[p] and self.groups.find(p) not in roots:
                roots.append(self.groups.find(p))
        # NOTE: an anchor group first, so that its epilogue joins it before any other producer.
        roots.sort(key=lambda r: not self.summary[r].anchor)
        for root in roots:
            reason = self._refusal(root, i, pat)
            if reason is None:
                members = set(self.groups.members(root)) | set(self.groups.members(i))
                if not self.groups.cycle_free(members):
                    reason = "a binding outside the group lies between them"
            if reason is not None:
                self._remark(root, i, reason)
                continue
            merged = self.summary[self.groups.find(root)].merged(self.summary[self.groups.find(i)])
            self.groups.merge(root, i)
            self.summary[self.groups.find(i)] = merged

    def _refusal(self, root: int, i: int, pat: Pattern) -> str | None:
        """Why binding ``i`` may not join the group of ``root`` (None: it may)."""
        g, mine = self.summary[self.groups.find(root)], self.summary[self.groups.find(i)]
        if g.opaque or mine.opaque:
            return "an opaque operator is never fused"
        if mine.anchor:
            return "an anchor (matmul, conv2d) starts its group: it takes no producers"
        if g.reduce:
            return "a reduction ends its group"
        if len(g.names) + len(mine.names) > MAX_FUSED_OPS:
            return f"a group holds at most {MAX_FUSED_OPS} operators (MAX_FUSED_OPS)"
        if not g.anchor:
            return None
        if mine.reduce:
            return "a group holds one anchor or reduction"
        if pat > Pattern.BROADCAST:
            return "an anchor takes only an element-wise / broadcast epilogue"
        if len(mine.names) > 1:
            return "an anchor's epilogue takes no other producers"
        members = set(self.groups.members(root))
        inside = [p for p in self.graph.producers[i] if p in members]
        closure = self._closure(members | {i})  # NOTE: once for every producer
        if any(not self._epilogue_only(p, closure) for p in inside):
            return "the anchor group's value is also used elsewhere (it is written once)"
        if any(self._grows(p, i) for p in inside):
            return "the epilogue broadcasts the anchor's result to a larger shape"
        return None

    def _epilogue_only(self, p: int, closure: set[int]) -> bool:
        """Whether every use of binding ``p``'s value lies in ``closure``: the group and the
        epilogue that joins it next (`_closure`: the diamonds of SiLU ``x * sigmoid(x)`` and
        GELU's ``x * (1 + erf(x / sqrt 2)) / 2`` after a conv or matmul)."""
        if self.graph.escapes[p]:
            return False
        return all(j in closure for j in self.graph.consumers[p])

    def _closure(self, members: set[int]) -> set[int]:
        """``members`` and, repeatedly, the element-wise / broadcast bindings not yet grouped
        that read only values in the set (and do not grow them): an epilogue whose every
        binding will join the group."""
        out, frontier = set(members), list(members)
        while frontier:
            for j in self.graph.consumers[frontier.pop()]:
                pat, producers = self.pattern[j], self.graph.producers[j]
                if j in out or j in self.summary or pat is None or pat > Pattern.BROADCAST:
                    continue
                if set(producers) <= out and not any(self._grows(q, j) for q in producers):
                    out.add(j)
                    frontier.append(j)
        return out

    def _grows(self, p: int, i: int) -> bool:
        """Whether binding ``i``'s result has more elements than binding ``p``'s (constant
        shapes). NOTE: the anchor's schedule tiles the epilogue's output, so a squeeze-excite
        ``x * sigmoid(conv(s))`` fused into the 1x1 conv computed the conv once per pixel of
        ``x``: EfficientNet-B0's four 7x7x1152 ones took 337 us each."""
        a, b = (static_dims(self.graph.bindings[k].var) for k in (p, i))
        return a is not None and b is not None and math.prod(b) > math.prod(a)

    def _remark(self, root: int, i: int, reason: str) -> None:
        if config.debug_level() < 1:
            return
        ops = "_".join(self.summary[self.groups.find(root)].names) or "?"
        name = self.names[i] or type(self.graph.bindings[i].value).__name__
        var = self.graph.bindings[i].var.name_hint
        config.remark(f"FuseOps: {name} ({var}) not fused with group fused_{ops}: {reason}")


class _Fuser(ExprMutator):
    def __init__(self, mod: IRModule) -> None:
        super().__init__(mod)
        self.uses: dict[int, int] = {}

    def fuse(self, func: Function) -> Function:
        self.uses = use_counts(func)
        out = self.visit(func)
        assert isinstance(out, Function)
        return out

    def visit_binding_block(self, block: BindingBlock) -> BindingBlock | None:
        if not isinstance(block, DataflowBlock):
            return super().visit_binding_block(block)
        graph = BlockGraph(block, self.uses)
        groups = _BlockFuser(graph).run()
        if not groups:
            return block
        outlined = {}
        for g in groups:
            names = [op_short_name(r) for m in g if (r := fusable_record(graph.bindings[m].value))]
            out = outline(graph, g, {PRIMITIVE: 1}, keep_scalars=True, free_symbols=True)
            if out is None:
                config.remark(
                    f"FuseOps: group fused_{'_'.join(names)} left unfused: it uses a "
                    "symbolic variable its inputs do not define"
                )
                continue
            gv = self.builder.add_func(out.func, fused_name("fused", names))
            outlined[g[0]] = call_bindings(gv, out, dataflow=True)
        groups_used = [g for g in groups if g[0] in outlined]
        if not groups_used:
            return block
        return self._rebuild(graph, groups_used, outlined)

    def _rebuild(
        self, graph: BlockGraph, groups: list[list[int]], outlined: dict[int, list[Any]]
    ) -> DataflowBlock:
        sched = Groups(graph)
        for g in groups:
            sched.start(g[0])
            for m in g[1:]:
                sched.start(m)
                sched.merge(g[0], m)
        bindings = []
        for unit in sched.schedule():
            if unit[0] in outlined and sched.grouped[unit[0]]:
                bindings.extend(outlined[unit[0]])
            else:
                bindings.extend(graph.bindings[m] for m in unit)
        return DataflowBlock(tuple(bindings), None)


@dataclass(frozen=True)
class FuseOps(Pass):
    """Group operator calls into ``Primitive`` functions (see the module docstring)."""

    name: ClassVar[str] = "fuse-ops"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        fuser = _Fuser(mod)
        changed = {}
        for gv, func in mod.items():
            if is_lowerable(func):
                new = fuser.fuse(func)  # type: ignore[arg-type]
                if new is not func:
                    changed[gv] = new
        if not changed:
            return mod
        return fuser.builder.get().update_all(changed)


__all__ = ["FuseOps", "fusable_record", "op_short_name"]
