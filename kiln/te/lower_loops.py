"""The loops of one stage: leaf loop variables, every axis's extent and value, and guards.

Given the range a stage must cover (its *region*: the full shape at the root, a tile when
computed at a consumer's loop), each leaf axis becomes a loop from 0 to its extent. Relations
are replayed forwards for extents (a split's inner extent is the factor, its outer extent the
ceiling of the parent's over it; a fused extent is the product) and backwards for values (a
split parent is ``outer * inner_extent + inner``; fused children are ``fused // inner_extent``
and ``fused % inner_extent``). A split whose extent is not provably divisible adds a guard
``parent < extent``; each guard records the leaf loops it reads so lowering can place it at the
innermost loop it needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kiln.arith import simplify
from kiln.arith.linear import to_linear
from kiln.te.relations import Fuse, Split
from kiln.te.tensor import AxisVar, ComputeOp
from kiln.tir.expr import FloorDiv, FloorMod, PrimExpr, Var, as_const_int, convert

if TYPE_CHECKING:
    from kiln.te.schedule import Stage


@dataclass(eq=False)
class Guard:
    """A condition the innermost statements need, reading the leaf loops at ``deps``."""

    deps: frozenset[int]
    cond: PrimExpr
    reduce: bool


@dataclass(eq=False)
class StageLoops:
    """Everything lowering needs about one stage's loops (see the module docstring)."""

    stage: Stage
    leaves: list[AxisVar]
    loop_vars: dict[AxisVar, Var]
    extents: dict[AxisVar, PrimExpr]
    offsets: dict[AxisVar, PrimExpr]
    deps: dict[AxisVar, frozenset[int]]
    guards: list[Guard]
    root_values: dict[AxisVar, PrimExpr]
    region: list[tuple[PrimExpr, PrimExpr]]
    elided: set[AxisVar]

    @property
    def first_reduce(self) -> int:
        """Position of the first reduction leaf (the number of leaves when there is none)."""
        return next((k for k, a in enumerate(self.leaves) if a.is_reduce), len(self.leaves))

    def depth(self, deps: frozenset[int]) -> int:
        """How many leaf loops enclose a statement that reads the loops at ``deps``."""
        return max(deps) + 1 if deps else 0


def make_stage_loops(
    stage: Stage, region: list[tuple[PrimExpr, PrimExpr]], names: dict[AxisVar, str]
) -> StageLoops:
    """The loops of ``stage`` covering ``region`` (one (min, extent) per data axis); ``names``
    gives each leaf loop variable its (function-unique) name."""
    op = stage.op
    assert isinstance(op, ComputeOp)
    roots: list[AxisVar] = [*op.axis, *op.reduce_axis]
    mins: dict[AxisVar, PrimExpr] = {a: lo for a, (lo, _) in zip(op.axis, region)}
    extents: dict[AxisVar, PrimExpr] = {a: ext for a, (_, ext) in zip(op.axis, region)}
    for k in op.reduce_axis:
        assert k.dom is not None
        mins[k], extents[k] = k.dom.min, k.dom.extent
    for rel in stage.relations:
        _forward(rel, extents)
    leaves = list(stage.leaf_iter_vars)
    loop_vars = {a: Var(names[a], a.dtype) for a in leaves}
    # NOTE: a plain loop of extent 1 is not emitted; its axis is 0 wherever it is used.
    elided = {
        a
        for a in leaves
        if as_const_int(extents[a]) == 1
        and (a not in stage.iter_attrs or stage.iter_attrs[a].is_default)
    }
    offsets: dict[AxisVar, PrimExpr] = {
        a: convert(0, a.dtype) if a in elided else v for a, v in loop_vars.items()
    }
    deps = {a: frozenset([k]) for k, a in enumerate(leaves)}
    for rel in reversed(stage.relations):
        _backward(rel, extents, offsets, deps)
    guards = [
        Guard(deps[rel.parent], offsets[rel.parent] < extents[rel.parent], rel.parent.is_reduce)
        for rel in stage.relations
        if isinstance(rel, Split) and not _divisible(rel, extents)
    ]
    values = {a: simplify(mins[a] + offsets[a]) for a in roots}
    return StageLoops(
        stage, leaves, loop_vars, extents, offsets, deps, guards, values, region, elided
    )


def _forward(rel: Split | Fuse, extents: dict[AxisVar, PrimExpr]) -> None:
    if isinstance(rel, Split):
        ext = extents[rel.parent]
        if rel.factor is not None:
            factor = _retype(rel.factor, ext)
            extents[rel.inner] = factor
            extents[rel.outer] = ceildiv(ext, factor)
        else:
            assert rel.nparts is not None
            nparts = _retype(rel.nparts, ext)
            extents[rel.outer] = nparts
            extents[rel.inner] = ceildiv(ext, nparts)
    else:
        extents[rel.fused] = simplify(extents[rel.outer] * extents[rel.inner])


def _retype(value: PrimExpr, like: PrimExpr) -> PrimExpr:
    """A constant ``value`` in the index dtype of ``like``."""
    v = as_const_int(value)
    return convert(v, like.dtype) if v is not None else value


def _backward(
    rel: Split | Fuse,
    extents: dict[AxisVar, PrimExpr],
    offsets: dict[AxisVar, PrimExpr],
    deps: dict[AxisVar, frozenset[int]],
) -> None:
    if isinstance(rel, Split):
        value = offsets[rel.outer] * extents[rel.inner] + offsets[rel.inner]
        offsets[rel.parent] = simplify(value)
        deps[rel.parent] = deps[rel.outer] | deps[rel.inner]
    else:
        fused, inner_ext = offsets[rel.fused], extents[rel.inner]
        if as_const_int(extents[rel.outer]) == 1:
            offsets[rel.outer] = convert(0, fused.dtype)
        else:
            offsets[rel.outer] = simplify(FloorDiv(fused, inner_ext))
        offsets[rel.inner] = simplify(FloorMod(fused, inner_ext))
        deps[rel.outer] = deps[rel.inner] = deps[rel.fused]


def _divisible(rel: Split, extents: dict[AxisVar, PrimExpr]) -> bool:
    """True when the split covers its parent's extent exactly (no guard needed)."""
    ext = to_linear(extents[rel.parent])
    if rel.factor is not None:
        f = as_const_int(rel.factor)
        return f is not None and divides(f, ext.const, *ext.terms.values())
    n = as_const_int(rel.nparts) if rel.nparts is not None else None
    return n is not None and ext.is_const and ext.const % n == 0


def divides(c: int, *values: int) -> bool:
    """True when ``c`` divides every value (the coefficients and constant of a linear form)."""
    return all(v % c == 0 for v in values)


def ceildiv(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """``ceil(a / b)`` for non-negative ``a`` and positive ``b``, simplified."""
    return simplify(FloorDiv(a + (b - 1), b))
