"""Constant integer bounds of TIR expressions: a closed interval per expression.

`ConstIntBound(min_value, max_value)` is the closed interval ``[min_value, max_value]``; both ends
are Python ints. Unbounded ends use the sentinels `POS_INF` / `NEG_INF`, which are far outside
every dtype's range. Interval arithmetic saturates: any magnitude at or above ``2**90`` becomes
the sentinel, so sums and products with an infinite end need no special cases (``0 * inf`` is
``0``, which is right for bounds because every actual value is finite). Only division and modulo
treat infinite ends explicitly.

Overflow. Signed integer overflow is undefined in C, the language kiln generates, so (as in TVM)
the analysis assumes signed index arithmetic does not overflow and intersects every computed
interval with the dtype's range. Unsigned arithmetic wraps in C, so an unsigned interval that
leaves the dtype's range becomes the whole range. Non-integer expressions are unbounded.

Invariant: for every assignment of the free variables within their bounds (and for which no
signed intermediate overflows and no divisor is zero), the value of ``e`` lies in
``BoundAnalyzer.bound(e)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Union

from kiln.ir.deep import DeepWalker, descend
from kiln.ir.dtype import DataType
from kiln.tir.expr import (
    CMP_OPS,
    Add,
    And,
    Broadcast,
    Cast,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Select,
    SizeVar,
    Sub,
    Var,
    convert,
)

POS_INF = 1 << 100
NEG_INF = -POS_INF
_SAT = 1 << 90
DIM_MAX = 1 << 62
"""The largest value a symbolic tensor dim is assumed to take (dims are never negative): the
bound under which the graph level (`kiln.relax`) and the operator library (`kiln.topi`) simplify
shapes, so that both read ``min(2**62, seq)`` (a slice to the end) as ``seq``."""


def _sat(x: int) -> int:
    """Saturate ``x`` to a sentinel when it is too large to be a real value."""
    if x >= _SAT:
        return POS_INF
    if x <= -_SAT:
        return NEG_INF
    return x


@dataclass(frozen=True, slots=True)
class ConstIntBound:
    """The closed interval ``[min_value, max_value]`` of integers; ends may be infinite.

    Invariant: ``min_value <= max_value`` (bounds are never empty).
    """

    min_value: int
    max_value: int
    POS_INF: ClassVar[int] = POS_INF
    NEG_INF: ClassVar[int] = NEG_INF

    def __post_init__(self) -> None:
        if self.min_value > self.max_value:
            raise ValueError(f"empty bound [{self.min_value}, {self.max_value}]")

    @property
    def is_const(self) -> bool:
        """True when the interval holds exactly one value."""
        return self.min_value == self.max_value

    def contains(self, value: int) -> bool:
        """Whether ``value`` lies in the interval."""
        return self.min_value <= value <= self.max_value

    def is_subset_of(self, other: ConstIntBound) -> bool:
        """Whether every value of this interval lies in ``other``."""
        return other.min_value <= self.min_value and self.max_value <= other.max_value

    def union(self, other: ConstIntBound) -> ConstIntBound:
        """The smallest interval holding both."""
        return ConstIntBound(
            min(self.min_value, other.min_value), max(self.max_value, other.max_value)
        )

    def intersect(self, other: ConstIntBound) -> ConstIntBound | None:
        """The common part, or None when the intervals are disjoint."""
        lo = max(self.min_value, other.min_value)
        hi = min(self.max_value, other.max_value)
        return ConstIntBound(lo, hi) if lo <= hi else None

    def negate(self) -> ConstIntBound:
        """The interval of ``-v`` for ``v`` in this one."""
        return ConstIntBound(-self.max_value, -self.min_value)

    def __repr__(self) -> str:
        def show(v: int) -> str:
            return "+inf" if v == POS_INF else "-inf" if v == NEG_INF else str(v)

        return f"ConstIntBound({show(self.min_value)}, {show(self.max_value)})"


EVERYTHING = ConstIntBound(NEG_INF, POS_INF)
BoundLike = Union[ConstIntBound, tuple[int, int]]


def as_bound(value: BoundLike) -> ConstIntBound:
    """A `ConstIntBound` from itself or an inclusive ``(lo, hi)`` pair."""
    if isinstance(value, ConstIntBound):
        return value
    lo, hi = value
    if not isinstance(lo, int) or not isinstance(hi, int):
        raise TypeError(f"a bound needs two ints (lo, hi), got {value!r}")
    return ConstIntBound(_sat(lo), _sat(hi))


def dtype_bound(dtype: DataType) -> ConstIntBound:
    """Every value of ``dtype`` (per lane); unbounded for non-integer types."""
    if dtype.is_bool:
        return ConstIntBound(0, 1)
    if dtype.is_int:
        return ConstIntBound(-(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1)
    if dtype.is_uint:
        return ConstIntBound(0, (1 << dtype.bits) - 1)
    return EVERYTHING


def fit_dtype(b: ConstIntBound, dtype: DataType) -> ConstIntBound:
    """``b`` limited to ``dtype``: clamped for signed ints, whole range when unsigned leaves it."""
    full = dtype_bound(dtype)
    if dtype.is_uint or dtype.is_bool:
        return b if b.is_subset_of(full) else full
    return b.intersect(full) or full


# -- interval arithmetic ------------------------------------------------------------------------


def bound_add(a: ConstIntBound, b: ConstIntBound) -> ConstIntBound:
    """Interval of ``a + b``."""
    return ConstIntBound(_sat(a.min_value + b.min_value), _sat(a.max_value + b.max_value))


def bound_sub(a: ConstIntBound, b: ConstIntBound) -> ConstIntBound:
    """Interval of ``a - b``."""
    return ConstIntBound(_sat(a.min_value - b.max_value), _sat(a.max_value - b.min_value))


def bound_mul(a: ConstIntBound, b: ConstIntBound) -> ConstIntBound:
    """Interval of ``a * b`` (extremes lie at the corners)."""
    corners = [_sat(x * y) for x in (a.min_value, a.max_value) for y in (b.min_value, b.max_value)]
    return ConstIntBound(min(corners), max(corners))


def bound_scale(a: ConstIntBound, c: int) -> ConstIntBound:
    """Interval of ``a * c`` for a constant ``c``."""
    return bound_mul(a, ConstIntBound(c, c))


def _positive_part(b: ConstIntBound) -> ConstIntBound | None:
    return b.intersect(ConstIntBound(1, POS_INF))


def _negative_part(b: ConstIntBound) -> ConstIntBound | None:
    return b.intersect(ConstIntBound(NEG_INF, -1))


def _by_divisor_sign(
    a: ConstIntBound,
    b: ConstIntBound,
    pos: Callable[[ConstIntBound, ConstIntBound], ConstIntBound],
    neg: Callable[[ConstIntBound, ConstIntBound], ConstIntBound],
) -> ConstIntBound:
    """Union of ``pos(a, b+)`` and ``neg(a, b-)`` over the nonzero parts of the divisor."""
    parts = []
    bp, bn = _positive_part(b), _negative_part(b)
    if bp is not None:
        parts.append(pos(a, bp))
    if bn is not None:
        parts.append(neg(a, bn))
    if not parts:  # the divisor is always zero: undefined behaviour, anything goes
        return EVERYTHING
    return parts[0] if len(parts) == 1 else parts[0].union(parts[1])


def _fdiv(x: int, y: int) -> int:
    """floor(x / y) for y >= 1 (possibly +inf) and x possibly infinite."""
    if x in (POS_INF, NEG_INF):
        return x
    if y == POS_INF:
        return 0 if x >= 0 else -1
    return x // y


def _tdiv(x: int, y: int) -> int:
    """trunc(x / y) for y >= 1 (possibly +inf) and x possibly infinite."""
    if x in (POS_INF, NEG_INF):
        return x
    if y == POS_INF:
        return 0
    q = abs(x) // y
    return q if x >= 0 else -q


def _floordiv_pos(a: ConstIntBound, b: ConstIntBound) -> ConstIntBound:
    """floordiv over ``a`` and a strictly positive divisor interval ``b``."""
    p, q = b.min_value, b.max_value
    lo = _fdiv(a.min_value, p if a.min_value < 0 else q)
    hi = _fdiv(a.max_value, p if a.max_value >= 0 else q)
    return ConstIntBound(lo, hi)


def _truncdiv_pos(a: ConstIntBound, b: ConstIntBound) -> ConstIntBound:
    """truncdiv over ``a`` and a strictly positive divisor interval ``b``."""
    p, q = b.min_value, b.max_value
    lo = _tdiv(a.min_value, p if a.min_value < 0 else q)
    hi = _tdiv(a.max_value, p if a.max_value >= 0 else q)
    return ConstIntBound(lo, hi)


def bound_floordiv(a: ConstIntBound, b: ConstIntBound) -> ConstIntBound:
    """Interval of ``a // b`` (floor) over the nonzero values of ``b``."""
    # floordiv(a, b) == floordiv(-a, -b)
    return _by_divisor_sign(a, b, _floordiv_pos, lambda x, y: _floordiv_pos(x.negate(), y.negate()))


def bound_truncdiv(a: ConstIntBound, b: ConstIntBound) -> ConstIntBound:
    """Interval of C ``a / b`` (truncating) over the nonzero values of ``b``."""
    # truncdiv(a, b) == -truncdiv(a, -b)
    return _by_divisor_sign(a, b, _truncdiv_pos, lambda x, y: _truncdiv_pos(x, y.negate()).negate())


def _floormod_pos(a: ConstIntBound, b: ConstIntBound) -> ConstIntBound:
    """floormod over ``a`` and a strictly positive divisor interval ``b``: in ``[0, b - 1]``."""
    if a.min_value >= 0 and a.max_value < b.min_value:
        return a
    top = _sat(b.max_value - 1)
    if a.min_value >= 0:
        top = min(top, a.max_value)
    return ConstIntBound(0, top)


def bound_floormod(a: ConstIntBound, b: ConstIntBound) -> ConstIntBound:
    """Interval of ``a % b`` (floor: the sign of ``b``) over the nonzero values of ``b``."""
    # floormod(a, b) == -floormod(-a, -b)
    return _by_divisor_sign(
        a, b, _floormod_pos, lambda x, y: _floormod_pos(x.negate(), y.negate()).negate()
    )


def bound_truncmod(a: ConstIntBound, b: ConstIntBound) -> ConstIntBound:
    """truncmod: the sign of ``a``, magnitude below ``|b|`` and at most ``|a|``."""
    parts = [p for p in (_positive_part(b), _positive_part(b.negate())) if p is not None]
    if not parts:
        return EVERYTHING
    smallest = min(p.min_value for p in parts)
    top = _sat(max(p.max_value for p in parts) - 1)
    lo, hi = a.min_value, a.max_value
    if (lo >= 0 and hi < smallest) or (hi <= 0 and lo > -smallest):
        return a
    return ConstIntBound(0 if lo >= 0 else max(lo, -top), 0 if hi <= 0 else min(hi, top))


def bound_min(a: ConstIntBound, b: ConstIntBound) -> ConstIntBound:
    """Interval of ``min(a, b)``."""
    return ConstIntBound(min(a.min_value, b.min_value), min(a.max_value, b.max_value))


def bound_max(a: ConstIntBound, b: ConstIntBound) -> ConstIntBound:
    """Interval of ``max(a, b)``."""
    return ConstIntBound(max(a.min_value, b.min_value), max(a.max_value, b.max_value))


_BINARY: dict[type, Callable[[ConstIntBound, ConstIntBound], ConstIntBound]] = {
    Add: bound_add,
    Sub: bound_sub,
    Mul: bound_mul,
    Div: bound_truncdiv,
    Mod: bound_truncmod,
    FloorDiv: bound_floordiv,
    FloorMod: bound_floormod,
    Min: bound_min,
    Max: bound_max,
}
_BOOL_RESULT = (*CMP_OPS, And, Or, Not)


class BoundAnalyzer(DeepWalker):
    """Computes `ConstIntBound`s of expressions under known variable bounds (memoized).

    ``var_bounds`` maps a `Var` (by identity) to its interval. A variable without an entry has
    ``[0, max]`` when it is a `SizeVar`, else its dtype's range. The memo is dropped whenever a
    variable bound changes.
    """

    def __init__(self, var_bounds: Mapping[Var, BoundLike] | None = None) -> None:
        self.var_bounds: dict[Var, ConstIntBound] = {
            v: as_bound(b) for v, b in (var_bounds or {}).items()
        }
        self._memo: dict[PrimExpr, ConstIntBound] = {}

    def set_var_bound(self, var: Var, bound: ConstIntBound | None) -> None:
        """Set (or with None, forget) the bound of ``var``."""
        if bound is None:
            self.var_bounds.pop(var, None)
        else:
            self.var_bounds[var] = bound
        self._memo.clear()

    def var_bound(self, var: Var) -> ConstIntBound:
        """The bound of ``var``: given, or from its kind and dtype."""
        given = self.var_bounds.get(var)
        if given is not None:
            return given
        full = dtype_bound(var.dtype)
        if isinstance(var, SizeVar):
            return full.intersect(ConstIntBound(0, POS_INF)) or full
        return full

    def bound(self, e: PrimExpr) -> ConstIntBound:
        """The bound of ``e`` (see the module docstring for the guarantee)."""
        hit = self._memo.get(e)
        if hit is None:
            hit = descend(self, self._compute, e)
            self._memo[e] = hit
        return hit

    def exact(self, e: PrimExpr) -> ConstIntBound:
        """Like `bound`, without assuming that ``e``'s own signed arithmetic stays in its dtype:
        the interval of the mathematical value of its +, -, *, / tree (other nodes by `bound`).
        ``n * m`` of two int32 variables reaches ``2**62``."""
        op = _BINARY.get(type(e))
        if op is None or not e.dtype.is_int:
            return self.bound(e)
        a, b = descend(self, self.exact, e.a), descend(self, self.exact, e.b)  # type: ignore
        return op(a, b)

    def may_overflow(self, e: PrimExpr) -> bool:
        """Whether the signed scalar operation at the top of ``e`` can leave its dtype's range
        for operand values within their bounds (the operands assumed not to overflow)."""
        dt = e.dtype
        if not dt.is_int or dt.lanes != 1:
            return False
        op = _BINARY.get(type(e))
        if op is not None:
            exact = op(self.bound(e.a), self.bound(e.b))  # type: ignore[attr-defined]
        elif isinstance(e, Cast) and e.value.dtype.is_integer:
            exact = self.bound(e.value)
        else:
            return False
        return not exact.is_subset_of(dtype_bound(dt))

    def _compute(self, e: PrimExpr) -> ConstIntBound:
        dt = e.dtype
        if not (dt.is_integer or dt.is_bool):
            return EVERYTHING
        if isinstance(e, IntImm):
            return ConstIntBound(e.value, e.value)
        if isinstance(e, Var):
            return self.var_bound(e)
        op = _BINARY.get(type(e))
        if op is not None:
            return fit_dtype(op(self.bound(e.a), self.bound(e.b)), dt)  # type: ignore[attr-defined]
        if isinstance(e, _BOOL_RESULT):
            return ConstIntBound(0, 1)
        return self._compute_other(e)

    def _compute_other(self, e: PrimExpr) -> ConstIntBound:
        dt = e.dtype
        if isinstance(e, Select):
            return self.bound(e.true_value).union(self.bound(e.false_value))
        if isinstance(e, Cast):
            return self._cast(e)
        if isinstance(e, Let):
            return self._let(e)
        if isinstance(e, Broadcast):
            return self.bound(e.value)
        if isinstance(e, Ramp):
            base, stride = self.bound(e.base), self.bound(e.stride)
            last = bound_add(base, bound_scale(stride, e.lanes - 1))
            return fit_dtype(base.union(last), dt.element_of())
        return dtype_bound(dt)

    def _cast(self, e: Cast) -> ConstIntBound:
        src = e.value.dtype
        if e.dtype.is_bool:
            inner = self.bound(e.value)
            if inner.min_value > 0 or inner.max_value < 0:
                return ConstIntBound(1, 1)
            return ConstIntBound(0, 0) if inner == ConstIntBound(0, 0) else ConstIntBound(0, 1)
        if not (src.is_integer or src.is_bool):
            return dtype_bound(e.dtype)
        inner = self.bound(e.value)
        full = dtype_bound(e.dtype)
        return inner if inner.is_subset_of(full) else full

    def _let(self, e: Let) -> ConstIntBound:
        old = self.var_bounds.get(e.var)
        self.set_var_bound(e.var, self.bound(e.value))
        try:
            return self.bound(e.body)
        finally:
            self.set_var_bound(e.var, old)


def normalize_var_bounds(var_bounds: Mapping[Var, BoundLike] | None) -> dict[Var, ConstIntBound]:
    """Check and convert a user's ``{var: (lo, hi)}`` map (inclusive ends)."""
    out: dict[Var, ConstIntBound] = {}
    for v, b in (var_bounds or {}).items():
        if not isinstance(v, Var):
            raise TypeError(f"var_bounds keys must be tir.Var, got {v!r}")
        out[v] = as_bound(b)
    return out


def const_int_bound(e: Any, var_bounds: Mapping[Var, BoundLike] | None = None) -> ConstIntBound:
    """The constant bound of ``e`` given inclusive ``{var: (lo, hi)}`` bounds."""
    return BoundAnalyzer(normalize_var_bounds(var_bounds)).bound(convert(e))
