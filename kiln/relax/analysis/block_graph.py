"""The dataflow graph of one dataflow block, and groups of its bindings (what `FuseOps` and
`PartitionForCompiler` share).

`BlockGraph(block, uses)` numbers the bindings of ``block`` in order; ``producers[i]`` are the
bindings whose variables binding ``i`` reads (or that define, by ``match_cast``, a symbolic
variable it uses), ``consumers[i]`` those that read binding ``i``,
and ``escapes[i]`` says that binding ``i``'s variable is also used outside the block (the
function's result, a later block). ``uses`` counts every use of every variable of the enclosing
function (`use_counts`).

`Groups` is a union-find over the bindings. `Groups.cycle_free(members)` says whether making
``members`` one unit keeps the graph acyclic: no binding outside the unit may lie on a path
between two of its members (the unit's call could then neither precede nor follow it).
`Groups.schedule()` orders the units (groups and single bindings) topologically, keeping the
original order wherever dependencies allow. Invariant: groups only ever merge; a binding that
belongs to no group is its own unit.
"""

from __future__ import annotations

import heapq
from typing import Any

from kiln.relax.analysis.struct_info import tir_vars
from kiln.relax.binding import BindingBlock, MatchCast
from kiln.relax.expr import Call, Tuple, TupleGetItem, Var


def value_vars(value: Any) -> list[Var]:
    """The variables a normalized binding value reads directly (call arguments, tuple fields, a
    tuple item's tuple, an alias); nested functions and branches are not entered."""
    out: list[Var] = []
    stack = [value]
    while stack:
        e = stack.pop()
        if isinstance(e, Var):
            out.append(e)
        elif isinstance(e, Call):
            stack.extend(reversed(e.args))
            if isinstance(e.op, Var):
                stack.append(e.op)
        elif isinstance(e, Tuple):
            stack.extend(reversed(e.fields))
        elif isinstance(e, TupleGetItem):
            stack.append(e.tuple_value)
    return out


class BlockGraph:
    """Producers, consumers and escaping values of the bindings of one block."""

    def __init__(self, block: BindingBlock, uses: dict[int, int]) -> None:
        self.bindings = list(block.bindings)
        index = {id(b.var): i for i, b in enumerate(self.bindings)}
        n = len(self.bindings)
        self.producers: list[list[int]] = [[] for _ in range(n)]
        self.consumers: list[list[int]] = [[] for _ in range(n)]
        inside = [0] * n
        for i, b in enumerate(self.bindings):
            for v in value_vars(b.value):
                j = index.get(id(v))
                if j is None:
                    continue
                inside[j] += 1
                if j not in self.producers[i]:
                    self.producers[i].append(j)
                    self.consumers[j].append(i)
        self.uses = [uses.get(id(b.var), 0) for b in self.bindings]
        self.escapes = [self.uses[i] > inside[i] for i in range(n)]
        self._symbol_edges()

    def _symbol_edges(self) -> None:
        """A binding that uses a symbolic variable a ``match_cast`` of this block defines (its
        first mention: a dim read from data, `Ctx.run_time_ints`) depends on that binding."""
        seen: set[int] = set()
        definer: dict[int, int] = {}
        for i, b in enumerate(self.bindings):
            mentioned = tir_vars((b.var.struct_info_, b.value))
            if isinstance(b, MatchCast):
                for v in tir_vars(b.struct_info):
                    if id(v) not in seen:
                        definer[id(v)] = i
            for v in mentioned:
                j = definer.get(id(v))
                if j is not None and j != i and j not in self.producers[i]:
                    self.producers[i].append(j)
                    self.consumers[j].append(i)
            seen.update(id(v) for v in mentioned)
            if isinstance(b, MatchCast):
                seen.update(id(v) for v in tir_vars(b.struct_info))

    def __len__(self) -> int:
        return len(self.bindings)


class Groups:
    """Union-find groups over the bindings of a `BlockGraph` (see the module docstring)."""

    def __init__(self, graph: BlockGraph) -> None:
        self.graph = graph
        self.parent = list(range(len(graph)))
        self.grouped = [False] * len(graph)

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def members(self, i: int) -> list[int]:
        """The bindings of ``i``'s group, in order."""
        root = self.find(i)
        return [j for j in range(len(self.parent)) if self.find(j) == root]

    def start(self, i: int) -> None:
        """Make binding ``i`` a group of its own."""
        self.grouped[i] = True

    def merge(self, i: int, j: int) -> None:
        self.parent[self.find(j)] = self.find(i)

    def cycle_free(self, members: set[int]) -> bool:
        """Whether ``members`` can become one unit (see the module docstring)."""
        producers = self.graph.producers
        outside = [p for m in members for p in producers[m] if p not in members]
        seen: set[int] = set()
        stack = list(outside)
        while stack:
            k = stack.pop()
            if k in seen:
                continue
            seen.add(k)
            for p in producers[k]:
                if p in members:
                    return False
                stack.append(p)
        return True

    def groups(self) -> list[list[int]]:
        """Every group with more than zero members (started or merged), in order of its first
        binding."""
        out: dict[int, list[int]] = {}
        for i in range(len(self.parent)):
            if self.grouped[i]:
                out.setdefault(self.find(i), []).append(i)
        return sorted(out.values(), key=lambda g: g[0])

    def schedule(self) -> list[list[int]]:
        """The units (each a group or a single binding) in a dependency-respecting order that
        keeps the original order where it can."""
        unit_of: dict[int, int] = {}
        units: list[list[int]] = []
        for g in self.groups():
            for m in g:
                unit_of[m] = len(units)
            units.append(g)
        for i in range(len(self.parent)):
            if i not in unit_of:
                unit_of[i] = len(units)
                units.append([i])
        deps: list[set[int]] = [set() for _ in units]
        for u, members in enumerate(units):
            for m in members:
                deps[u].update(unit_of[p] for p in self.graph.producers[m] if unit_of[p] != u)
        users: list[list[int]] = [[] for _ in units]
        for u, d in enumerate(deps):
            for p in d:
                users[p].append(u)
        waiting = [len(d) for d in deps]
        ready = [(units[u][-1], u) for u in range(len(units)) if waiting[u] == 0]
        heapq.heapify(ready)
        order: list[list[int]] = []
        while ready:
            _, u = heapq.heappop(ready)
            order.append(units[u])
            for w in users[u]:
                waiting[w] -= 1
                if waiting[w] == 0:
                    heapq.heappush(ready, (units[w][-1], w))
        assert len(order) == len(units), "grouping made a cycle"
        return order
