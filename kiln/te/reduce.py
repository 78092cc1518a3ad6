"""Reductions: `reduce_axis`, the `Reduce` expression, and the reducers `sum`, `max`, `min` and
`comm_reducer` (a user-defined commutative reducer).

A `Reduce` must be the whole body of a compute: lowering initializes the output with the
reducer's identity and then combines every point of the reduction axes into it (only where the
optional ``where`` predicate holds).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kiln.arith import simplify
from kiln.errors import IRError, IRValueError
from kiln.ir.dtype import DataType
from kiln.ir.span import Span
from kiln.ir.visitor import pre_order_nodes
from kiln.te.tensor import AxisVar
from kiln.tir.expr import Max, Min, PrimExpr, Var, const, convert
from kiln.tir.functor import substitute
from kiln.tir.op import max_value, min_value
from kiln.tir.stmt import IterKind, Range


def reduce_axis(dom: Any, name: str = "rv") -> AxisVar:
    """A reduction axis over ``dom``: a `Range`, ``(lo, hi)`` (``hi`` excluded) or an extent."""
    if isinstance(dom, Range):
        rng = dom
    elif isinstance(dom, (tuple, list)) and len(dom) == 2:
        lo, hi = (_int_expr(v, name) for v in dom)
        rng = Range(lo, _extent(lo, hi))
    elif isinstance(dom, (int, PrimExpr)):
        rng = Range(convert(0, _int_expr(dom, name).dtype), _int_expr(dom, name))
    else:
        raise IRError(
            f"reduce_axis {name!r}: expected a Range, a (lo, hi) pair or an extent, got {dom!r}"
        )
    if rng.min.dtype != rng.extent.dtype:
        raise IRError(
            f"reduce_axis {name!r}: bounds have different dtypes ({rng.min.dtype}, "
            f"{rng.extent.dtype})"
        )
    return AxisVar(name, rng.min.dtype, dom=rng, iter_kind=IterKind.COMM_REDUCE)


def _int_expr(v: Any, name: str) -> PrimExpr:
    if isinstance(v, float) or (isinstance(v, PrimExpr) and not v.dtype.is_integer):
        raise IRError(f"reduce_axis {name!r}: bounds must be integers, got {v!r}")
    e = convert(v)
    if not e.dtype.is_integer:
        raise IRError(f"reduce_axis {name!r}: bounds must be integers, got {v!r}")
    return e


def _extent(lo: PrimExpr, hi: PrimExpr) -> PrimExpr:
    if hasattr(lo, "value") and hasattr(hi, "value"):
        return convert(hi.value - lo.value, lo.dtype)  # type: ignore[attr-defined]
    return simplify(hi - lo)


@dataclass(frozen=True, eq=False)
class CommReducer:
    """A commutative, associative combiner ``result(lhs, rhs)`` with its ``identity``."""

    name: str
    lhs: Var
    rhs: Var
    result: PrimExpr
    identity: PrimExpr

    def combine(self, acc: PrimExpr, value: PrimExpr) -> PrimExpr:
        """The combiner applied to an accumulator and a new value."""
        return substitute(self.result, {self.lhs: acc, self.rhs: value})


@dataclass(frozen=True, slots=True, eq=False)
class Reduce(PrimExpr):
    """``combiner`` folded over every point of ``axis`` where ``condition`` holds."""

    combiner: CommReducer
    source: PrimExpr
    axis: tuple[AxisVar, ...]
    condition: PrimExpr
    dtype: DataType = None  # type: ignore[assignment]
    span: Span | None = None

    def __post_init__(self) -> None:
        if self.dtype is None:
            object.__setattr__(self, "dtype", self.source.dtype)


class Reducer:
    """A callable reducer: ``reducer(expr, axis=k, where=cond)`` builds a `Reduce`."""

    def __init__(
        self,
        name: str,
        fcombine: Callable[[PrimExpr, PrimExpr], Any],
        fidentity: Callable[[DataType], Any] | Any,
    ) -> None:
        self.name = name
        self.fcombine = fcombine
        self.fidentity = fidentity

    def __call__(self, expr: Any, axis: Any = None, where: Any = None) -> Reduce:
        source = _source(self.name, expr)
        axes = _axes(self.name, axis)
        cond = _condition(self.name, where)
        return Reduce(self.combiner(source.dtype), source, axes, cond)

    def combiner(self, dtype: DataType) -> CommReducer:
        """The combiner specialised to ``dtype`` (checks that it keeps the dtype)."""
        if dtype.is_handle or dtype.is_void or dtype.lanes != 1:
            raise IRError(f"{self.name}: cannot reduce values of dtype {dtype}")
        x, y = Var("x", dtype), Var("y", dtype)
        result = convert(self.fcombine(x, y), dtype)
        if result.dtype != dtype:
            raise IRError(
                f"{self.name}: the combiner returns {result.dtype} for {dtype} operands; "
                "it must keep the operand dtype"
            )
        ident = self.fidentity(dtype) if callable(self.fidentity) else self.fidentity
        ident = convert(ident, dtype)
        if ident.dtype != dtype:
            raise IRError(f"{self.name}: identity has dtype {ident.dtype}, expected {dtype}")
        return CommReducer(self.name, x, y, result, ident)

    def __repr__(self) -> str:
        return f"Reducer({self.name!r})"


def _source(name: str, expr: Any) -> PrimExpr:
    if isinstance(expr, float):
        raise IRError(f"{name}: cannot reduce the Python float {expr!r}; use tir.const")
    source = convert(expr)
    if any(isinstance(n, Reduce) for n in pre_order_nodes(source)):
        raise IRValueError(f"{name}: nested reductions are not supported; use two computes")
    return source


def _axes(name: str, axis: Any) -> tuple[AxisVar, ...]:
    if axis is None:
        raise IRValueError(f"{name}: needs axis=, the reduction axis (or a list of them)")
    axes = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
    if not axes:
        raise IRValueError(f"{name}: the list of reduction axes is empty")
    for a in axes:
        if not isinstance(a, AxisVar) or not a.is_reduce:
            raise IRError(
                f"{name}: {a!r} is not a reduction axis; create one with te.reduce_axis((lo, hi))"
            )
    if len(set(map(id, axes))) != len(axes):
        raise IRValueError(f"{name}: a reduction axis is listed twice")
    return axes


def _condition(name: str, where: Any) -> PrimExpr:
    if where is None:
        return const(True)
    cond = convert(where)
    if not cond.dtype.is_bool:
        raise IRError(f"{name}: where= must be a boolean expression, got dtype {cond.dtype}")
    return cond


def comm_reducer(
    fcombine: Callable[[PrimExpr, PrimExpr], Any],
    fidentity: Callable[[DataType], Any] | Any,
    name: str = "reduce",
) -> Reducer:
    """A custom commutative reducer from a combine function and an identity.

    ``fidentity`` is a function of the dtype (``lambda t: tir.const(1, t)``) or a number.
    """
    return Reducer(name, fcombine, fidentity)


def _no_bool(name: str, fidentity: Callable[[DataType], Any]) -> Callable[[DataType], Any]:
    def identity(dtype: DataType) -> Any:
        if dtype.is_bool:
            raise IRError(f"{name}: cannot reduce bool values; cast them to an integer first")
        return fidentity(dtype)

    return identity


sum = Reducer("sum", lambda x, y: x + y, _no_bool("sum", lambda t: const(0, t)))  # noqa: A001
max = Reducer("max", Max, _no_bool("max", min_value))  # noqa: A001
min = Reducer("min", Min, _no_bool("min", max_value))  # noqa: A001
