"""The pattern language: patterns over relax calls, what a match binds, and rules.

See `kiln.relax.pattern` for the overview. Patterns are frozen dataclasses; ``match_into``
matches one at an expression, adding to a `Match`, and ``root_ops`` tells the driver which
operators a pattern's root may call (so it tries only the rules that may apply).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from kiln.errors import IRError
from kiln.ir.dtype import DataType
from kiln.ir.node import Node
from kiln.ir.op import Op
from kiln.relax.analysis.struct_info import Fit, dims_fit
from kiln.relax.expr import Call, Constant, Expr, TupleGetItem, Var
from kiln.relax.struct_info import TensorStructInfo, as_dim

_ANY: Any = object()

Defs = Mapping[int, Expr]
"""The values of the variables a pattern may look through, by ``id`` of the variable."""


class Match:
    """What a pattern bound: ``m.x`` or ``m["x"]`` (as written), ``m.value("x")`` (looked
    through), and ``m.root``, the value being rewritten. A name that is a method of `Match`
    (``value``, ``resolve``, ``bind``) or ``root`` is read as ``m["value"]``."""

    __slots__ = ("_bound", "_defs", "root")

    def __init__(self, root: Expr, defs: Defs) -> None:
        self.root = root
        self._bound: dict[str, Any] = {}
        self._defs = defs

    def __getitem__(self, name: str) -> Any:
        if name not in self._bound:
            raise IRError(f"the pattern bound no {name!r}; it bound {sorted(self._bound)}")
        return self._bound[name]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self[name]

    def __contains__(self, name: str) -> bool:
        return name in self._bound

    def value(self, name: str) -> Any:
        """What ``name`` is bound to, looking through variables to the values bound to them."""
        return self.resolve(self[name])

    def resolve(self, e: Any) -> Any:
        """``e``, or the value bound to it when it is a variable the driver may look through."""
        while isinstance(e, Var) and id(e) in self._defs:
            e = self._defs[id(e)]
        return e

    def bind(self, name: str, e: Any) -> bool:
        """Bind ``name`` to ``e``; False when it is bound to something else already."""
        if name == "_":
            return True
        old = self._bound.get(name, _ANY)
        if old is _ANY:
            self._bound[name] = e
            return True
        return old is e or not isinstance(old, (Node, np.ndarray)) and old == e


# -- patterns ------------------------------------------------------------------------------------
class Pattern:
    """Base of patterns (see the module docstring)."""

    def match(self, e: Expr, defs: Defs | None = None) -> Match | None:
        """The bindings of this pattern matched at ``e`` (variables looked through in
        ``defs``), or None."""
        m = Match(e, defs or {})
        return m if self.match_into(e, m) else None

    def match_into(self, e: Any, m: Match) -> bool:
        """Match at ``e``, adding to ``m``'s bindings (left partly filled when it fails)."""
        raise TypeError(f"{type(self).__name__} must implement match_into(e, m)")

    def root_ops(self) -> frozenset[str] | None:
        """The operators a value this pattern matches may call (None: any value)."""
        return None

    def __or__(self, other: Pattern) -> Pattern:
        return Alt(self, other)

    def named(self, name: str) -> Pattern:
        """This pattern, with what it matched (as written) bound to ``name``."""
        return Named(self, name)

    def where(self, pred: Callable[[Any], bool]) -> Pattern:
        """This pattern, where ``pred`` holds of the matched expression (as written)."""
        return Where(self, pred)

    def has_dtype(self, dtype: str | DataType) -> Pattern:
        want = DataType.parse(dtype)
        return self.where(lambda e: getattr(_sinfo(e), "dtype", None) == want)

    def has_ndim(self, ndim: int) -> Pattern:
        return self.where(lambda e: getattr(_sinfo(e), "ndim", -1) == ndim)

    def has_shape(self, dims: Sequence[Any]) -> Pattern:
        """A tensor whose dims provably equal ``dims`` (ints or `tir` expressions; None: any)."""
        return self.where(lambda e: _dims_are(e, dims))


@dataclass(frozen=True)
class Wildcard(Pattern):
    """Anything, bound as written to ``name`` (``_``: not bound); never looks through."""

    name: str = "_"

    def match_into(self, e: Any, m: Match) -> bool:
        return m.bind(self.name, e)


class _Wildcards:
    """``P.x`` is ``Wildcard("x")``."""

    def __getattr__(self, name: str) -> Wildcard:
        if name.startswith("__"):
            raise AttributeError(name)
        return Wildcard(name)


P = _Wildcards()


@dataclass(frozen=True)
class Alt(Pattern):
    """``first``, else ``second`` (``first``'s partial bindings dropped)."""

    first: Pattern
    second: Pattern

    def match_into(self, e: Any, m: Match) -> bool:
        saved = dict(m._bound)
        if self.first.match_into(e, m):
            return True
        m._bound = saved
        return self.second.match_into(e, m)

    def root_ops(self) -> frozenset[str] | None:
        a, b = self.first.root_ops(), self.second.root_ops()
        return None if a is None or b is None else a | b


@dataclass(frozen=True)
class Named(Pattern):
    """``pattern``, with the matched expression (as written) bound to ``name``."""

    pattern: Pattern
    name: str

    def match_into(self, e: Any, m: Match) -> bool:
        return self.pattern.match_into(e, m) and m.bind(self.name, e)

    def root_ops(self) -> frozenset[str] | None:
        return self.pattern.root_ops()


@dataclass(frozen=True)
class Where(Pattern):
    """``pattern`` where ``pred`` holds of the matched expression."""

    pattern: Pattern
    pred: Callable[[Any], bool]

    def match_into(self, e: Any, m: Match) -> bool:
        return self.pattern.match_into(e, m) and bool(self.pred(e))

    def root_ops(self) -> frozenset[str] | None:
        return self.pattern.root_ops()


@dataclass(frozen=True)
class CallPattern(Pattern):
    """A call of operator ``op`` whose attributes and operands match (``args`` None: any
    operands); calling it sets the operands: ``is_op("relax.add")(P.x, P.y)``."""

    op: str
    args: tuple[Any, ...] | None = None
    attrs: Mapping[str, Any] = field(default_factory=dict)

    def __call__(self, *args: Any) -> CallPattern:
        return replace(self, args=args)

    def match_into(self, e: Any, m: Match) -> bool:
        c = m.resolve(e)
        if not isinstance(c, Call) or not isinstance(c.op, Op) or c.op.name != self.op:
            return False
        for key, want in self.attrs.items():
            if key not in c.attrs or not _match_value(want, c.attrs[key], m):
                return False
        if self.args is None:
            return True
        if len(self.args) != len(c.args):
            return False
        return all(_match_value(p, a, m) for p, a in zip(self.args, c.args))

    def root_ops(self) -> frozenset[str] | None:
        return frozenset([self.op])


def is_op(name: str, **attrs: Any) -> CallPattern:
    """A call of the operator ``name`` (checked to exist) with these attributes."""
    Op.get(name)
    return CallPattern(name, None, attrs)


@dataclass(frozen=True)
class ConstPattern(Pattern):
    """A `Constant` whose every element is ``value`` (a float zero only of the same sign) and
    whose data satisfies ``pred``."""

    value: Any = _ANY
    pred: Callable[[np.ndarray], bool] | None = None

    def match_into(self, e: Any, m: Match) -> bool:
        c = m.resolve(e)
        if not isinstance(c, Constant):
            return False
        if self.value is not _ANY and not all_elements_are(c.data, self.value):
            return False
        return self.pred is None or bool(self.pred(c.data))


def is_const(value: Any = _ANY, pred: Callable[[np.ndarray], bool] | None = None) -> ConstPattern:
    """A constant tensor (of all-``value`` elements; whose data satisfies ``pred``)."""
    return ConstPattern(value, pred)


@dataclass(frozen=True)
class TupleGetPattern(Pattern):
    """Field ``index`` of a tuple that matches ``tuple_value``."""

    tuple_value: Pattern
    index: int

    def match_into(self, e: Any, m: Match) -> bool:
        t = m.resolve(e)
        if not isinstance(t, TupleGetItem) or t.index != self.index:
            return False
        return self.tuple_value.match_into(t.tuple_value, m)


def is_tuple_get(tuple_value: Pattern, index: int) -> TupleGetPattern:
    return TupleGetPattern(tuple_value, index)


def _match_value(want: Any, got: Any, m: Match) -> bool:
    """A pattern matched at ``got``, or a plain value compared with it (sequences as tuples)."""
    if isinstance(want, Pattern):
        return want.match_into(got, m)
    if isinstance(want, (list, tuple)) and isinstance(got, (list, tuple)):
        return tuple(want) == tuple(got)
    return bool(want == got) if not isinstance(got, Node) else want is got


def all_elements_are(data: np.ndarray, value: Any) -> bool:
    """Whether every element of ``data`` equals ``value``, a float zero only with its sign (so
    ``0.0`` and ``-0.0`` are told apart: adding them is not the same)."""
    if data.size == 0 or not np.all(data == value):
        return False
    return data.dtype.kind != "f" or bool(np.all(np.signbit(data) == np.signbit(value)))


def _sinfo(e: Any) -> Any:
    return getattr(e, "struct_info_", None)


def _dims_are(e: Any, dims: Sequence[Any]) -> bool:
    have = getattr(_sinfo(e), "dims", None)
    if have is None or len(have) != len(dims):
        return False
    return all(d is None or dims_fit(h, as_dim(d)) is Fit.PASS for h, d in zip(have, dims))


def same_tensor(a: Expr, b: Expr) -> bool:
    """Whether struct info proves ``a`` and ``b`` tensors of one dtype and one shape (both
    shapes known: a rank alone does not rule out broadcasting)."""
    sa, sb = a.struct_info_, b.struct_info_
    if not isinstance(sa, TensorStructInfo) or not isinstance(sb, TensorStructInfo):
        return False
    if sa.dtype.is_void or sa.dtype != sb.dtype:
        return False
    if sa.shape is not None and sa.shape is sb.shape:
        return True
    da, db = sa.dims, sb.dims
    if da is None or db is None or len(da) != len(db):
        return False
    return all(dims_fit(x, y) is Fit.PASS for x, y in zip(da, db))


# -- rules ---------------------------------------------------------------------------------------
Rewrite = Callable[[Match], "Expr | None"]


@dataclass(frozen=True)
class Rule:
    """Where ``pattern`` matches, ``fn(match)`` is the replacement (None: left as is)."""

    pattern: Pattern
    fn: Rewrite
    name: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.pattern, Pattern):
            raise IRError(f"a rule needs a pattern, got {self.pattern!r}")
        if not self.name:
            object.__setattr__(self, "name", getattr(self.fn, "__name__", "rule"))


def rule(pattern: Pattern) -> Callable[[Rewrite], Rule]:
    """Decorator: the function becomes a `Rule` of ``pattern``, named after it."""
    return lambda fn: Rule(pattern, fn)


__all__ = [
    "Match",
    "P",
    "Pattern",
    "Rule",
    "all_elements_are",
    "is_const",
    "is_op",
    "is_tuple_get",
    "rule",
    "same_tensor",
]
