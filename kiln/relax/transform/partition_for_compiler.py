"""PartitionForCompiler: wrap what an external codegen supports into ``Compiler`` functions.

``PartitionForCompiler(name, patterns)`` matches the chain ``patterns`` (`ChainPattern`; by
default the ones the ``name`` backend registers, e.g. `kiln.relax.backend.dnnl`) in every
dataflow block of the module's plain graph functions, before `FuseOps` and `LowerTE`. Each
match becomes a private module function with attributes ``Primitive=1``, ``Compiler=<name>``,
``Composite=<pattern name>`` and a fresh ``global_symbol`` (``<name>_<pattern ops>``, the C
symbol its codegen defines), and the matched bindings become one call of it. `LowerTE` then
hands each such function to the codegen registered as ``name``.

NOTE: TVM merges adjacent composite functions of one compiler into a single external function
(MergeCompositeFunctions); here each match is its own external function, which keeps every
generated function one library call and costs one call per match.

A backend that needs an optional dependency says so first: partitioning for ``dnnl`` without
oneDNN installed is a `KilnError` naming the ``kiln[dnnl]`` extra.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from kiln.errors import KilnError
from kiln.ir.module import IRModule
from kiln.ir.transform import Pass, PassContext
from kiln.relax.analysis.block_graph import BlockGraph, Groups
from kiln.relax.analysis.chain_pattern import ChainPattern, match_chains
from kiln.relax.analysis.free_vars import use_counts
from kiln.relax.analysis.primitive import COMPILER, COMPOSITE, PRIMITIVE, is_lowerable
from kiln.relax.backend.codegen import backend_patterns
from kiln.relax.binding import BindingBlock, DataflowBlock
from kiln.relax.expr import Function
from kiln.relax.expr_functor import ExprMutator
from kiln.relax.outline import call_bindings, outline


class _Partitioner(ExprMutator):
    def __init__(self, mod: IRModule, compiler: str, patterns: Sequence[ChainPattern]) -> None:
        super().__init__(mod)
        self.compiler, self.patterns = compiler, list(patterns)
        self.uses: dict[int, int] = {}

    def partition(self, func: Function) -> Function:
        self.uses = use_counts(func)
        out = self.visit(func)
        assert isinstance(out, Function)
        return out

    def visit_binding_block(self, block: BindingBlock) -> BindingBlock | None:
        if not isinstance(block, DataflowBlock):
            return super().visit_binding_block(block)
        graph = BlockGraph(block, self.uses)
        groups = Groups(graph)
        replaced: dict[int, list[Any]] = {}
        for pattern, chain in match_chains(graph, self.patterns):
            if not groups.cycle_free(set(chain)):
                continue
            attrs = {PRIMITIVE: 1, COMPILER: self.compiler, COMPOSITE: pattern.name}
            out = outline(graph, chain, attrs)
            if out is None:
                continue
            short = "_".join(op.rsplit(".", 1)[-1] for op in pattern.ops)
            gv = self.builder.add_func(out.func, f"{self.compiler}_{short}")
            self.builder.update_func(gv, out.func.with_attr("global_symbol", gv.name_hint))
            for i in chain:
                groups.start(i)
                groups.merge(chain[0], i)
            replaced[chain[0]] = call_bindings(gv, out, dataflow=True)
        if not replaced:
            return block
        bindings: list[Any] = []
        for unit in groups.schedule():
            if unit[0] in replaced:
                bindings.extend(replaced[unit[0]])
            else:
                bindings.extend(graph.bindings[m] for m in unit)
        return DataflowBlock(tuple(bindings), None)


@dataclass(frozen=True)
class PartitionForCompiler(Pass):
    """Outline pattern matches into ``Compiler=<compiler>`` functions (module docstring)."""

    compiler: str = ""
    patterns: Sequence[ChainPattern] | None = None
    name: ClassVar[str] = "partition-for-compiler"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        patterns = self.patterns
        registered = backend_patterns(self.compiler)  # also checks the backend is installed
        if patterns is None:
            patterns = registered
        if patterns is None:
            raise KilnError(
                f"PartitionForCompiler: no patterns given and backend {self.compiler!r} "
                "registers none; pass patterns=[ChainPattern(...), ...]"
            )
        part = _Partitioner(mod, self.compiler, patterns)
        changed = {}
        for gv, func in mod.items():
            if is_lowerable(func):
                new = part.partition(func)  # type: ignore[arg-type]
                if new is not func:
                    changed[gv] = new
        if not changed:
            return mod
        return part.builder.get().update_all(changed)


__all__ = ["ChainPattern", "PartitionForCompiler"]
