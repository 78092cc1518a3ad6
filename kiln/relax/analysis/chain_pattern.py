"""Chain patterns over a dataflow block: what `PartitionForCompiler` matches.

A `ChainPattern` is a sequence of operator names; it matches bindings ``b0, b1, ...`` of one
block where each ``b(k+1)`` calls ``ops[k+1]`` with ``b(k)``'s variable as an argument, and
``b(k)``'s variable is used nowhere else (so the chain can become one external call writing
one result). The other arguments are free (parameters, other bindings, constants). ``check``
(optional) sees the matched bindings and may refuse the match (unsupported attributes, shapes or
dtypes). `match_chains` tries the patterns in order at every binding and keeps the first match
that does not overlap an earlier one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kiln.relax.analysis.block_graph import BlockGraph
from kiln.relax.binding import Binding
from kiln.relax.expr import Call

Check = Callable[[list[Binding]], bool]


@dataclass(frozen=True)
class ChainPattern:
    """A named chain of operator calls (see the module docstring)."""

    name: str
    ops: tuple[str, ...]
    check: Check | None = None


def _op(graph: BlockGraph, i: int) -> str | None:
    value = graph.bindings[i].value
    return getattr(value.op, "name", None) if isinstance(value, Call) else None


def _match_at(graph: BlockGraph, start: int, pattern: ChainPattern) -> list[int] | None:
    if _op(graph, start) != pattern.ops[0]:
        return None
    chain = [start]
    for name in pattern.ops[1:]:
        cur = chain[-1]
        if graph.escapes[cur] or graph.uses[cur] != 1 or len(graph.consumers[cur]) != 1:
            return None
        nxt = graph.consumers[cur][0]
        if _op(graph, nxt) != name:
            return None
        chain.append(nxt)
    if pattern.check is not None and not pattern.check([graph.bindings[i] for i in chain]):
        return None
    return chain


def match_chains(
    graph: BlockGraph, patterns: Sequence[ChainPattern]
) -> list[tuple[ChainPattern, list[int]]]:
    """Non-overlapping matches, each with its pattern, in block order."""
    taken: set[int] = set()
    out: list[tuple[ChainPattern, list[int]]] = []
    for i in range(len(graph)):
        if i in taken:
            continue
        for pattern in patterns:
            chain = _match_at(graph, i, pattern)
            if chain is not None and not taken.intersection(chain):
                taken.update(chain)
                out.append((pattern, chain))
                break
    return out
