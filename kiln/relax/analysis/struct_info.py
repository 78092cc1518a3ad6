"""Struct info analyses: fitting a value to an annotation, joining branches, erasing.

- `check_fits(base, derived, binds)`: does a value of struct info ``derived`` fit ``base``?
  `Fit.PASS` (provably), `Fit.UNKNOWN` (only a run-time check can tell: `R.match_cast`) or
  `Fit.FAIL` (provably not). Symbolic variables of ``base`` listed in ``binds`` as unbound
  (``binds[v] is None``) are bound on first use to the matching part of ``derived``.
- `struct_info_lca(a, b)`: the most specific struct info both fit (the join of `If` branches).
- `erase_to_well_defined(sinfo, defined)`: drop the parts that mention symbolic variables not
  in scope (a function's return, an `If` whose branches bind new dims).
- `substitute_sinfo(sinfo, vmap)`: symbolic variables replaced (the result of a call of a
  function with symbolic parameters).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from enum import IntEnum
from typing import Any

from kiln.arith import Analyzer
from kiln.arith.bound import DIM_MAX
from kiln.ir.node import Node
from kiln.ir.structural import structural_equal
from kiln.relax.expr import ShapeExpr, Var
from kiln.relax.struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from kiln.tir.analysis.vars import free_vars
from kiln.tir.expr import IntImm, PrimExpr
from kiln.tir.expr import Var as TirVar
from kiln.tir.functor import substitute


class Fit(IntEnum):
    """How well a value fits an annotation (ordered: the minimum of parts is the whole)."""

    FAIL = 0
    UNKNOWN = 1
    PASS = 2


def simplify_dim(e: PrimExpr) -> PrimExpr:
    """A dimension expression simplified (constants folded), knowing that every variable in it
    is a dim: ``max(seq, 0)`` is ``seq``."""
    if isinstance(e, (IntImm, TirVar)):
        return e
    return Analyzer({v: (0, DIM_MAX) for v in free_vars(e)}).simplify(e)


def static_dims(e: Any) -> list[int] | None:
    """``e``'s shape as ints when it is a tensor of constant shape and known dtype."""
    sinfo = getattr(e, "struct_info_", None)
    if not isinstance(sinfo, TensorStructInfo) or sinfo.dims is None or sinfo.dtype.is_void:
        return None
    dims = [getattr(d, "value", None) for d in sinfo.dims]
    return None if any(not isinstance(d, int) for d in dims) else dims  # type: ignore[misc]


def dims_fit(a: PrimExpr, b: PrimExpr) -> Fit:
    """Whether two dimension expressions are provably equal / provably different."""
    if a is b:
        return Fit.PASS
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return Fit.PASS if a.value == b.value else Fit.FAIL
    if structural_equal(a, b):
        return Fit.PASS
    diff = simplify_dim(a - b)
    if isinstance(diff, IntImm):
        return Fit.PASS if diff.value == 0 else Fit.FAIL
    return Fit.UNKNOWN


def tir_vars(node: Any) -> list[TirVar]:
    """The symbolic (`tir`) variables ``node`` mentions, by first occurrence (derived struct
    info of expressions is not entered: it repeats what the expression holds)."""
    out: dict[int, TirVar] = {}
    stack = [node]
    seen: set[int] = set()
    while stack:
        n = stack.pop()
        if type(n) is IntImm or n is None:
            continue
        if isinstance(n, TirVar):
            out.setdefault(id(n), n)
            continue
        if isinstance(n, (tuple, list)):
            stack.extend(reversed(n))
            continue
        if not isinstance(n, Node) or id(n) in seen:
            continue
        seen.add(id(n))
        own = _OWN_FIELDS.get(type(n))
        if own is None:
            own = _own_fields(type(n))
        stack.extend(getattr(n, f) for f in reversed(own))
    return list(out.values())


_OWN_FIELDS: dict[type, tuple[str, ...]] = {}


def _own_fields(cls: type) -> tuple[str, ...]:
    skip = {"span", "name", "name_hint", "dtype"}
    if cls is not Var and not issubclass(cls, Var):
        skip.add("struct_info_")
    names = tuple(f for f in cls.field_names() if f not in skip)  # type: ignore[attr-defined]
    _OWN_FIELDS[cls] = names
    return names


class _Fitter:
    def __init__(self, binds: dict[TirVar, PrimExpr | None] | None) -> None:
        self.binds = binds if binds is not None else {}

    def dim(self, base: PrimExpr, derived: PrimExpr) -> Fit:
        if type(base) is IntImm or not self.binds:
            return dims_fit(base, derived)
        if isinstance(base, TirVar) and base in self.binds:
            bound = self.binds[base]
            if bound is None:
                if derived.dtype != base.dtype:
                    return Fit.FAIL
                self.binds[base] = derived
                return Fit.PASS
            return dims_fit(bound, derived)
        if any(v in self.binds for v in tir_vars(base)):
            known = {v: e for v, e in self.binds.items() if e is not None}
            base = simplify_dim(substitute(base, known))
            if any(self.binds.get(v, 0) is None for v in tir_vars(base)):
                return Fit.UNKNOWN
        return dims_fit(base, derived)

    def dims(self, base: tuple[PrimExpr, ...], derived: tuple[PrimExpr, ...]) -> Fit:
        if len(base) != len(derived):
            return Fit.FAIL
        out = Fit.PASS
        for a, b in zip(base, derived):
            out = min(out, self.dim(a, b))
            if out is Fit.FAIL:
                return out
        return out

    def fit(self, base: StructInfo, derived: StructInfo) -> Fit:
        if isinstance(base, ObjectStructInfo):
            return Fit.PASS
        if isinstance(derived, ObjectStructInfo):
            return Fit.UNKNOWN
        if type(base) is not type(derived):
            return Fit.FAIL
        method = getattr(self, f"fit_{type(base).__name__}")
        return method(base, derived)

    def fit_PrimStructInfo(self, base: PrimStructInfo, derived: PrimStructInfo) -> Fit:
        if base.dtype != derived.dtype:
            return Fit.FAIL
        if base.value is None:
            return Fit.PASS
        if derived.value is None:
            return Fit.UNKNOWN
        return self.dim(base.value, derived.value)

    def fit_ShapeStructInfo(self, base: ShapeStructInfo, derived: ShapeStructInfo) -> Fit:
        rank = _rank(base.ndim, derived.ndim)
        if rank is not Fit.PASS or base.values is None:
            return rank
        if derived.values is None:
            return Fit.UNKNOWN
        return self.dims(base.values, derived.values)

    def fit_TensorStructInfo(self, base: TensorStructInfo, derived: TensorStructInfo) -> Fit:
        out = Fit.PASS
        if not base.dtype.is_void:
            if derived.dtype.is_void:
                out = Fit.UNKNOWN
            elif base.dtype != derived.dtype:
                return Fit.FAIL
        out = min(out, _rank(base.ndim, derived.ndim))
        if out is Fit.FAIL or base.shape is None:
            return out
        if derived.shape is None:
            return Fit.UNKNOWN
        if isinstance(base.shape, ShapeExpr) and isinstance(derived.shape, ShapeExpr):
            return min(out, self.dims(base.shape.values, derived.shape.values))
        return min(out, Fit.PASS if base.shape is derived.shape else Fit.UNKNOWN)

    def fit_TupleStructInfo(self, base: TupleStructInfo, derived: TupleStructInfo) -> Fit:
        if len(base.fields) != len(derived.fields):
            return Fit.FAIL
        out = Fit.PASS
        for a, b in zip(base.fields, derived.fields):
            out = min(out, self.fit(a, b))
        return out

    def fit_FuncStructInfo(self, base: FuncStructInfo, derived: FuncStructInfo) -> Fit:
        if base.purity and not derived.purity:
            return Fit.FAIL
        if base.params is None:
            return Fit.PASS
        if derived.params is None:
            return Fit.UNKNOWN
        if len(base.params) != len(derived.params):
            return Fit.FAIL
        out = self.fit(base.ret, derived.ret)
        for a, b in zip(base.params, derived.params):
            out = min(out, _Fitter(None).fit(b, a))
        return out


def _rank(base: int, derived: int) -> Fit:
    if base == -1 or base == derived:
        return Fit.PASS
    return Fit.UNKNOWN if derived == -1 else Fit.FAIL


def check_fits(
    base: StructInfo, derived: StructInfo, binds: dict[TirVar, PrimExpr | None] | None = None
) -> Fit:
    """Whether a value of struct info ``derived`` fits ``base`` (see the module docstring)."""
    return _Fitter(binds).fit(base, derived)


def is_base_of(base: StructInfo, derived: StructInfo) -> bool:
    """True when every value of struct info ``derived`` provably fits ``base``."""
    return check_fits(base, derived) is Fit.PASS


# -- substitution and erasure --------------------------------------------------------------------
def substitute_sinfo(sinfo: StructInfo, vmap: dict[TirVar, PrimExpr]) -> StructInfo:
    """``sinfo`` with symbolic variables replaced by expressions (dims simplified)."""
    if not vmap:
        return sinfo
    out = substitute(sinfo, vmap)
    return map_dims(out, simplify_dim)


def map_dims(sinfo: StructInfo, fn: Callable[[PrimExpr], PrimExpr]) -> StructInfo:
    """``sinfo`` with ``fn`` applied to every dimension / prim value."""
    if isinstance(sinfo, TensorStructInfo) and isinstance(sinfo.shape, ShapeExpr):
        values = tuple(fn(d) for d in sinfo.shape.values)
        if all(a is b for a, b in zip(values, sinfo.shape.values)):
            return sinfo
        return replace(sinfo, shape=ShapeExpr(values))
    if isinstance(sinfo, ShapeStructInfo) and sinfo.values is not None:
        return ShapeStructInfo(tuple(fn(d) for d in sinfo.values))
    if isinstance(sinfo, PrimStructInfo) and sinfo.value is not None:
        return PrimStructInfo(sinfo.dtype, fn(sinfo.value))
    if isinstance(sinfo, TupleStructInfo):
        return TupleStructInfo(tuple(map_dims(f, fn) for f in sinfo.fields))
    return sinfo


def erase_to_well_defined(
    sinfo: StructInfo,
    defined: Callable[[TirVar], bool],
    var_defined: Callable[[Var], bool] | None = None,
) -> StructInfo:
    """``sinfo`` without the shapes / values that mention variables not ``defined``."""

    def ok(node: Any) -> bool:
        return all(defined(v) for v in tir_vars(node))

    if isinstance(sinfo, TensorStructInfo):
        shape = sinfo.shape
        if shape is None:
            return sinfo
        keep = (
            ok(shape) if isinstance(shape, ShapeExpr) else bool(var_defined and var_defined(shape))
        )
        return sinfo if keep else TensorStructInfo(None, sinfo.dtype, sinfo.ndim)
    if isinstance(sinfo, ShapeStructInfo):
        return sinfo if ok(sinfo) else ShapeStructInfo(None, sinfo.ndim)
    if isinstance(sinfo, PrimStructInfo):
        return sinfo if ok(sinfo) else PrimStructInfo(sinfo.dtype)
    if isinstance(sinfo, TupleStructInfo):
        fields = tuple(erase_to_well_defined(f, defined, var_defined) for f in sinfo.fields)
        if all(a is b for a, b in zip(fields, sinfo.fields)):
            return sinfo
        return TupleStructInfo(fields)
    if isinstance(sinfo, FuncStructInfo) and not ok(sinfo):
        own = set(tir_vars(sinfo.params or ()))
        inner = all(defined(v) or v in own for v in tir_vars(sinfo))
        return sinfo if inner else FuncStructInfo.opaque_func(ObjectStructInfo(), sinfo.purity)
    return sinfo


def erase_vars(sinfo: StructInfo, gone: Iterable[TirVar]) -> StructInfo:
    """``sinfo`` without the parts that mention the variables ``gone``."""
    drop = {id(v) for v in gone}
    return erase_to_well_defined(sinfo, lambda v: id(v) not in drop, lambda v: True)


# -- join ----------------------------------------------------------------------------------------
def struct_info_lca(a: StructInfo, b: StructInfo) -> StructInfo:
    """The most specific struct info that both ``a`` and ``b`` fit."""
    if a is b or structural_equal(a, b):
        return a
    if isinstance(a, TensorStructInfo) and isinstance(b, TensorStructInfo):
        dtype = a.dtype if a.dtype == b.dtype else "void"
        ndim = a.ndim if a.ndim == b.ndim else -1
        return TensorStructInfo(None, dtype, ndim)
    if isinstance(a, ShapeStructInfo) and isinstance(b, ShapeStructInfo):
        return ShapeStructInfo(None, a.ndim if a.ndim == b.ndim else -1)
    if isinstance(a, PrimStructInfo) and isinstance(b, PrimStructInfo):
        return PrimStructInfo(a.dtype) if a.dtype == b.dtype else ObjectStructInfo()
    if isinstance(a, TupleStructInfo) and isinstance(b, TupleStructInfo):
        if len(a.fields) != len(b.fields):
            return ObjectStructInfo()
        return TupleStructInfo(tuple(struct_info_lca(x, y) for x, y in zip(a.fields, b.fields)))
    if isinstance(a, FuncStructInfo) and isinstance(b, FuncStructInfo):
        return FuncStructInfo.opaque_func(struct_info_lca(a.ret, b.ret), a.purity and b.purity)
    return ObjectStructInfo()
