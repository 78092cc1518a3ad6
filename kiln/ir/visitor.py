"""Visitor and mutator bases for the IR of both levels (name-based dispatch along the MRO).

`Visitor.visit(n)` calls ``visit_<ClassName>`` for the node's class or its nearest base class
that has one (so a `Var` subclass reaches ``visit_Var``), else visits the children.
`Mutator.visit(n)` returns ``n`` itself when nothing below changed, so callers detect a fixpoint
with ``is``. Tuples and `FrozenMap` fields are walked element-wise; other values are left alone.
Every ``visit`` is one nesting level of a `kiln.ir.deep` walk: IR nested thousands of levels
deep is walked without `RecursionError` (the walk moves to a fresh stack where needed).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from kiln.ir.deep import PROBE_MASK, probed
from kiln.ir.node import FrozenMap, Node


def _lookup(visitor: Any, cls: type) -> Callable[[Any], Any]:
    """The ``visit_<Class>`` method for ``cls`` or its nearest base class, else generic_visit."""
    for base in cls.__mro__:
        fn = getattr(visitor, f"visit_{base.__name__}", None)
        if fn is not None:
            return fn
    return visitor.generic_visit


class Visitor:
    """Read-only traversal; override ``visit_<ClassName>`` and call ``generic_visit`` to recurse."""

    _walk_depth = 0

    def __init__(self) -> None:
        self._dispatch: dict[type, Callable[[Any], Any]] = {}

    def visit(self, n: Any) -> None:
        fn = self._dispatch.get(type(n))
        if fn is None:
            fn = _lookup(self, type(n))
            self._dispatch[type(n)] = fn
        depth = self._walk_depth  # NOTE: `kiln.ir.deep.descend`, inlined (a call per node)
        if depth & PROBE_MASK == PROBE_MASK:
            probed(self, fn, depth, (n,))
            return
        self._walk_depth = depth + 1
        try:
            fn(n)
        finally:
            self._walk_depth = depth

    def generic_visit(self, n: Any) -> None:
        if isinstance(n, Node):
            for name in n.field_names():
                if name != "span":
                    self._visit_value(getattr(n, name))
        else:
            self._visit_value(n)

    def _visit_value(self, v: Any) -> None:
        if isinstance(v, Node):
            self.visit(v)
        elif isinstance(v, tuple):
            for x in v:
                if isinstance(x, (Node, tuple)):
                    self._visit_value(x)
        elif isinstance(v, FrozenMap):
            for k, x in v.items():
                if isinstance(k, Node):
                    self.visit(k)
                if isinstance(x, Node):
                    self.visit(x)


class Mutator:
    """Rewriting traversal that preserves identity of unchanged subtrees."""

    _walk_depth = 0

    def __init__(self) -> None:
        self._dispatch: dict[type, Callable[[Any], Any]] = {}

    def visit(self, n: Any) -> Any:
        fn = self._dispatch.get(type(n))
        if fn is None:
            fn = _lookup(self, type(n))
            self._dispatch[type(n)] = fn
        depth = self._walk_depth  # NOTE: `kiln.ir.deep.descend`, inlined (a call per node)
        if depth & PROBE_MASK == PROBE_MASK:
            return probed(self, fn, depth, (n,))
        self._walk_depth = depth + 1
        try:
            return fn(n)
        finally:
            self._walk_depth = depth

    def generic_visit(self, n: Any) -> Any:
        if not isinstance(n, Node):
            return self._mutate_value(n)
        changes: dict[str, Any] = {}
        for name in n.field_names():
            if name == "span":
                continue
            old = getattr(n, name)
            new = self._mutate_value(old)
            if new is not old:
                changes[name] = new
        return replace(n, **changes) if changes else n  # type: ignore[type-var]

    def _mutate_value(self, v: Any) -> Any:
        if isinstance(v, Node):
            return self.visit(v)
        if isinstance(v, tuple):
            new = tuple(self._mutate_value(x) if isinstance(x, (Node, tuple)) else x for x in v)
            return v if all(a is b for a, b in zip(new, v)) else new
        if isinstance(v, FrozenMap):
            items = [
                (
                    self._mutate_value(k) if isinstance(k, Node) else k,
                    self._mutate_value(x) if isinstance(x, Node) else x,
                )
                for k, x in v.items()
            ]
            same = all(k is k0 and x is x0 for (k, x), (k0, x0) in zip(items, v.items()))
            return v if same else type(v)(dict(items))
        return v


class MemoMutator(Mutator):
    """A `Mutator` whose result for a node depends on the node alone (a substitution): each
    node object is rewritten once per walk, and a node shared in several places (a DAG) maps to
    one new node everywhere. NOTE: without it a shared subtree became one copy per place: TE's
    inlining of a chain of reshapes, slices and concats (Swin's window reversal) grew each
    index into a tree of thousands of copies (5-6 s per kernel in the simplifier)."""

    def __init__(self) -> None:
        super().__init__()
        self._done: dict[int, tuple[Any, Any]] = {}

    def visit(self, n: Any) -> Any:
        done = self._done.get(id(n))
        if done is not None and done[0] is n:
            return done[1]
        out = super().visit(n)
        self._done[id(n)] = (n, out)
        return out


def post_order_visit(node: Any, fn: Callable[[Any], None]) -> None:
    """Call ``fn`` on every node below and including ``node``, children first."""

    class _V(Visitor):
        def visit(self, n: Any) -> None:
            super().visit(n)
            fn(n)

    _V().visit(node)


def pre_order_nodes(node: Any) -> list[Any]:
    """Every node below and including ``node``, parents first."""
    out: list[Any] = []

    class _V(Visitor):
        def visit(self, n: Any) -> None:
            out.append(n)
            super().visit(n)

    _V().visit(node)
    return out


def distinct_nodes(node: Any) -> list[Any]:
    """Every distinct node object below and including ``node``, parents first, each once: a
    subtree shared in several places (TE's inlined bodies are DAGs) is walked once, where
    `pre_order_nodes` walks it once per place."""
    out: list[Any] = []
    seen: set[int] = set()

    class _V(Visitor):
        def visit(self, n: Any) -> None:
            if id(n) in seen:
                return
            seen.add(id(n))
            out.append(n)
            super().visit(n)

    _V().visit(node)
    return out
