"""Structural equality and hashing of IR: same shape, variables matched by where they are defined.

Binder nodes (variables, buffers) are compared through a mapping built as the comparison walks
both trees: at a definition site (a field listed in the parent's ``_def_fields``, or any binder met
for the first time when ``map_free_vars`` is on) the two binders are paired, and every later use
must use the paired binder. A binder's name never matters. `GlobalVar`s compare by name; numpy
arrays (graph-level constants) by dtype, shape and values (NaN equal to NaN).
`structural_hash` is consistent with this: binders hash by their definition order.
Both walk IR of any depth up to `kiln.ir.deep.MAX_NESTING`.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from enum import Enum
from typing import Any

import numpy as np

from kiln.ir.deep import DeepWalker, stack_safe
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.node import Attrs, Node


class _Mismatch(Exception):
    def __init__(self, path: list[str], lhs: Any, rhs: Any, why: str) -> None:
        super().__init__(why)
        self.path, self.lhs, self.rhs, self.why = list(path), lhs, rhs, why


class _Equal(DeepWalker):
    def __init__(self, map_free_vars: bool) -> None:
        self.map_free = map_free_vars
        self.l2r: dict[int, Any] = {}
        self.r2l: dict[int, Any] = {}
        self.path: list[str] = []

    def fail(self, lhs: Any, rhs: Any, why: str) -> None:
        raise _Mismatch(self.path, lhs, rhs, why)

    def value(self, a: Any, b: Any, define: bool = False) -> None:
        if a is b:
            if isinstance(a, Node) and a._binder:
                self.bind(a, b, define)
            return
        if isinstance(a, Node) or isinstance(b, Node):
            if type(a) is not type(b):
                self.fail(a, b, f"node kinds differ: {type(a).__name__} vs {type(b).__name__}")
            self.node(a, b, define)
        elif isinstance(a, IRModule) and isinstance(b, IRModule):
            self.module(a, b)
        elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            self.array(a, b)
        elif isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
            if len(a) != len(b):
                self.fail(a, b, f"lengths differ: {len(a)} vs {len(b)}")
            for i, (x, y) in enumerate(zip(a, b)):
                self.path.append(f"[{i}]")
                self.value(x, y, define)
                self.path.pop()
        elif isinstance(a, Mapping) and isinstance(b, Mapping):
            self.mapping(a, b, define)
        elif (
            type(a) is not type(b)
            and not (isinstance(a, Enum) or isinstance(b, Enum))
            and not (_num(a) and _num(b))
        ):
            self.fail(a, b, f"values differ: {a!r} vs {b!r}")
        elif a != b and not (_nan(a) and _nan(b)):
            self.fail(a, b, f"values differ: {a!r} vs {b!r}")

    def array(self, a: Any, b: Any) -> None:
        """Arrays (constant tensors) are equal in dtype, shape and values (NaN equal to NaN)."""
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            self.fail(a, b, "an array compared with a non-array")
        if a.dtype != b.dtype or a.shape != b.shape:
            self.fail(a, b, f"arrays differ: {a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}")
        if not np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
            self.fail(a, b, "array values differ")

    def mapping(self, a: Mapping[Any, Any], b: Mapping[Any, Any], define: bool) -> None:
        if len(a) != len(b):
            self.fail(a, b, f"maps differ in size: {len(a)} vs {len(b)}")
        for (ka, va), (kb, vb) in zip(_items(a), _items(b)):
            self.path.append(f"[{ka!r}]")
            self.value(ka, kb, define)
            self.value(va, vb, define)
            self.path.pop()

    def bind(self, a: Node, b: Node, define: bool) -> bool:
        """Pair binders a and b; True if they were newly paired (fields still to compare)."""
        got_r, got_l = self.l2r.get(id(a)), self.r2l.get(id(b))
        if got_r is not None or got_l is not None:
            if got_r is not b or got_l is not a:
                self.fail(a, b, "variables are bound to different definitions")
            return False
        if not (define or self.map_free or a is b or self.implicitly_defined(a, b)):
            self.fail(a, b, "free variables differ (not defined in the compared code)")
        self.l2r[id(a)], self.r2l[id(b)] = b, a
        return True

    def implicitly_defined(self, a: Node, b: Node) -> bool:
        via = a._defined_through
        if via is None:
            return False
        inner_a, inner_b = getattr(a, via), getattr(b, via)
        return self.l2r.get(id(inner_a)) is inner_b

    @stack_safe
    def node(self, a: Node, b: Node, define: bool) -> None:
        if isinstance(a, GlobalVar):
            if a.name_hint != b.name_hint:  # type: ignore[attr-defined]
                self.fail(a, b, f"callees differ: {a.name_hint} vs {b.name_hint}")  # type: ignore
            return
        if a._binder and not self.bind(a, b, define):
            return
        for name in _compare_order(type(a)):
            self.path.append(f".{name}")
            sub_define = define if a._binder else name in a._def_fields
            self.value(getattr(a, name), getattr(b, name), sub_define)
            self.path.pop()

    def module(self, a: IRModule, b: IRModule) -> None:
        names_a = sorted(g.name_hint for g in a)
        names_b = sorted(g.name_hint for g in b)
        if names_a != names_b:
            self.fail(a, b, f"modules hold different functions: {names_a} vs {names_b}")
        for name in names_a:
            self.path.append(f"[{name!r}]")
            self.value(a[name], b[name])
            self.path.pop()
        self.path.append(".attrs")
        self.mapping(a.attrs, b.attrs, False)
        self.path.pop()


_ORDER: dict[type, tuple[str, ...]] = {}


def _items(m: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
    """Items in comparison order: attribute maps by key (their order carries no meaning)."""
    if isinstance(m, Attrs):
        return sorted(m.items(), key=lambda kv: kv[0])
    return list(m.items())


def _compare_order(cls: type[Node]) -> tuple[str, ...]:
    """Fields to compare, defining fields first (a definition precedes its uses)."""
    order = _ORDER.get(cls)
    if order is None:
        names = [n for n in cls.field_names() if n not in cls._ignore_fields]
        order = tuple(sorted(names, key=lambda n: n not in cls._def_fields))
        _ORDER[cls] = order
    return order


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _nan(x: Any) -> bool:
    return isinstance(x, float) and x != x


def structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> bool:
    """True when ``lhs`` and ``rhs`` have the same structure (see module docstring)."""
    try:
        _Equal(map_free_vars).value(lhs, rhs)
    except _Mismatch:
        return False
    return True


def first_mismatch(
    lhs: Any, rhs: Any, map_free_vars: bool = False
) -> tuple[str, Any, Any, str] | None:
    """(path, lhs part, rhs part, reason) of the first difference, or None when equal."""
    try:
        _Equal(map_free_vars).value(lhs, rhs)
    except _Mismatch as m:
        return "".join(m.path) or "<root>", m.lhs, m.rhs, m.why
    return None


def assert_structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> None:
    """Raise `AssertionError` showing the first differing spot in both programs."""
    diff = first_mismatch(lhs, rhs, map_free_vars)
    if diff is None:
        return
    path, a, b, why = diff
    raise AssertionError(
        f"structural mismatch at {path}: {why}\n"
        f"--- lhs at that spot ---\n{_show(a)}\n--- rhs at that spot ---\n{_show(b)}\n"
        f"--- lhs ---\n{_show(lhs)}\n--- rhs ---\n{_show(rhs)}"
    )


def _show(x: Any) -> str:
    if isinstance(x, (Node, IRModule)):
        return str(x)
    return repr(x)


class _Hasher(DeepWalker):
    def __init__(self, map_free_vars: bool) -> None:
        self.map_free = map_free_vars
        self.index: dict[int, int] = {}

    def mix(self, parts: tuple[Any, ...]) -> Any:
        """One value for ``parts`` (sub-results, names, numbers)."""
        return hash(parts)

    def leaf(self, x: Any) -> Any:
        """The value of a non-IR field (a number, a string, an enum, a dtype...)."""
        try:
            return hash(x)
        except TypeError:
            return hash(type(x).__name__)

    def value(self, x: Any, define: bool = False) -> Any:
        if isinstance(x, Node):
            return self.node(x, define)
        if isinstance(x, IRModule):
            parts = [
                self.mix((g.name_hint, self.value(f)))
                for g, f in sorted(x.items(), key=lambda it: it[0].name_hint)
            ]
            return self.mix(("IRModule", tuple(parts), self.value(x.attrs)))
        if isinstance(x, (tuple, list)):
            return self.mix(("seq", tuple(self.value(v, define) for v in x)))
        if isinstance(x, np.ndarray):
            return self.mix(("array", str(x.dtype), x.shape, self.leaf(x.tobytes())))
        if isinstance(x, Mapping):
            items = tuple((self.value(k), self.value(v, define)) for k, v in _items(x))
            return self.mix(("map", items))
        if _num(x):  # Python hashes equal ints and floats alike, so 1 and 1.0 agree
            return self.leaf(x) if x == x else self.leaf("nan")
        return self.leaf(x)

    @stack_safe
    def node(self, n: Node, define: bool) -> Any:
        if isinstance(n, GlobalVar):
            return self.mix(("GlobalVar", n.name_hint))
        if n._binder:
            key = id(n)
            if key in self.index:
                return self.mix(("ref", self.index[key]))
            via = n._defined_through
            implicit = via is not None and id(getattr(n, via)) in self.index
            if not (define or self.map_free or implicit):
                return self.mix(("free", id(n)))
            self.index[key] = len(self.index)
        parts = [type(n).__name__]
        for name in _compare_order(type(n)):
            sub_define = define if n._binder else name in n._def_fields
            parts.append(self.value(getattr(n, name), sub_define))
        return self.mix(tuple(parts))


class _Digester(_Hasher):
    """`_Hasher` with values that do not depend on the process: sha256 hex digests over the
    ``repr`` of parts that are themselves digests, numbers, strings or names."""

    def mix(self, parts: tuple[Any, ...]) -> str:
        return hashlib.sha256(repr(parts).encode()).hexdigest()

    def leaf(self, x: Any) -> str:
        if isinstance(x, (bytes, bytearray)):
            return hashlib.sha256(x).hexdigest()
        if _num(x):  # NOTE: 1 and 1.0 agree, as in structural_equal
            whole = isinstance(x, int) or (math.isfinite(x) and x == int(x))
            return repr(int(x)) if whole else repr(float(x))
        if isinstance(x, Enum):
            return f"{type(x).__name__}.{x.name}"
        return f"{type(x).__name__}:{x}"


def structural_digest(x: Any) -> str:
    """A sha256 hex digest of ``x`` consistent with `structural_equal` (free variables mapped)
    that is the same in every process: what kiln's caches key IR on (`structural_hash` uses
    Python's per-process string hashing)."""
    return str(_Digester(True).value(x))


_HASHES: dict[tuple[int, bool], tuple[Any, int]] = {}
"""`structural_hash` of nodes by (id, map_free_vars), with the node (so an id is never reused
while remembered). Nodes are immutable and a hash is a fresh walk of the node alone, so the
answer for a node object never changes."""
HASH_MEMO_SIZE = 1 << 16


def structural_hash(x: Any, map_free_vars: bool = False) -> int:
    """A hash consistent with `structural_equal` (memoized per node: `_HASHES`; the simplifier's
    linear forms hash the same terms again at every rewrite of the sums holding them)."""
    if not isinstance(x, Node):
        return _Hasher(map_free_vars).value(x)
    key = (id(x), map_free_vars)
    known = _HASHES.get(key)
    if known is not None and known[0] is x:
        return known[1]
    h = _Hasher(map_free_vars).value(x)
    if len(_HASHES) >= HASH_MEMO_SIZE:
        _HASHES.clear()
    _HASHES[key] = (x, h)
    return h
