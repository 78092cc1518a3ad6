"""Host C of a lowered module as several translation units, to compile in parallel.

`pack_units(mod, count)` groups the module's functions: one group per exposed function, with
every function it calls, directly or not (a private helper called from two groups is emitted,
``static``, in both). The groups are packed into at most ``count`` modules, largest first, each
into the module with the least code so far (code measured in IR nodes). `generate_unit` emits
one (lowered) module with its own `CodeGenCHost`, without the library's list of exposed
functions: the caller emits that list (`metadata_c_source`) once, in a unit of its own. Units
only call each other through exported tvm-ffi entries (``__tvm_ffi_<name>``), so they link
together.

The packing is deterministic (same module, same units), so compiling the same module again
finds every unit's object in the build cache.
"""

from __future__ import annotations

from dataclasses import dataclass

from kiln.codegen.c_host import CodeGenCHost
from kiln.codegen.vector_report import VectorLoop
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.visitor import pre_order_nodes
from kiln.runtime import ArgInfo
from kiln.tir.expr import Call
from kiln.tir.function import PrimFunc


@dataclass
class Unit:
    """One generated translation unit: its C, its loops and the functions it exposes."""

    source: str
    loops: tuple[VectorLoop, ...]
    exposed: tuple[str, ...]
    signatures: dict[str, tuple[ArgInfo, ...]]


def _callees_and_size(func: PrimFunc, names: set[str]) -> tuple[list[str], int]:
    nodes = pre_order_nodes(func.body)
    called = [n.op.name_hint for n in nodes if isinstance(n, Call) and isinstance(n.op, GlobalVar)]
    return [c for c in called if c in names], len(nodes)


def function_groups(mod: IRModule) -> list[tuple[list[GlobalVar], int]]:
    """Per exposed function: it and its transitive callees, and their size in IR nodes."""
    by_name = {gv.name_hint: gv for gv, f in mod.items() if isinstance(f, PrimFunc)}
    info = {n: _callees_and_size(mod[gv], set(by_name)) for n, gv in by_name.items()}
    groups = []
    for name, gv in by_name.items():
        if mod[gv].global_symbol is None:
            continue
        seen: dict[str, None] = {}
        stack = [name]
        while stack:
            n = stack.pop()
            if n not in seen:
                seen[n] = None
                stack.extend(info[n][0])
        groups.append(([by_name[n] for n in seen], sum(info[n][1] for n in seen)))
    return groups


def pack_units(mod: IRModule, count: int) -> list[IRModule]:
    """The module's functions in at most ``count`` modules, largest first (see the module
    docstring); works before lowering as after (callees travel with their callers)."""
    groups = sorted(function_groups(mod), key=lambda g: (-g[1], g[0][0].name_hint))
    bins: list[tuple[dict[GlobalVar, None], list[int]]] = []
    for gvs, size in groups:
        if len(bins) < max(count, 1):
            bins.append(({}, [0]))
        target = min(bins, key=lambda b: b[1][0])
        target[0].update(dict.fromkeys(gvs))
        target[1][0] += size
    return [IRModule({gv: mod[gv] for gv in gvs}) for gvs, _ in bins]


def generate_unit(mod: IRModule) -> Unit:
    """The C of a lowered module, without the library's list of exposed functions."""
    gen = CodeGenCHost()
    gen.add_module(mod)
    source = gen.finish(metadata=False)
    return Unit(source, tuple(gen.vector_loops), tuple(gen.exposed), dict(gen.signatures))
