"""Schedule primitives that reshape a stage's loops: ``split``, ``fuse``, ``reorder``, ``tile``.

Preconditions (each raises `IRError` naming the stage and axis):
- the stage has loops (not a placeholder, not inlined);
- every axis is a current leaf of this stage: not one already split or fused away, not an axis
  of another stage;
- the axis carries no loop kind yet (annotate after reshaping);
- ``split``: exactly one of ``factor`` / ``nparts``, a positive integer;
- ``fuse``: the axes are adjacent leaves, outermost first, all data-parallel or all reduction;
- ``reorder``: no axis twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.errors import IRError, IRValueError
from kiln.te.relations import Fuse, Split
from kiln.te.tensor import AxisVar
from kiln.tir.expr import IntImm, PrimExpr, convert

if TYPE_CHECKING:
    from kiln.te.schedule import Stage


def check_has_loops(stage: Stage, prim: str) -> None:
    """Raise unless ``stage`` owns loops a primitive can change."""
    if stage.is_placeholder:
        raise IRValueError(f"{prim}: {stage.name!r} is a placeholder (an input); it has no loops")
    if stage.is_inlined:
        raise IRValueError(
            f"{prim}: stage {stage.name!r} is inlined into its consumers and has no loops; "
            "call compute_root() first"
        )


def leaf_index(stage: Stage, axis: Any, prim: str) -> int:
    """The position of ``axis`` among the stage's leaves, or an error saying why it is not one."""
    check_has_loops(stage, prim)
    if not isinstance(axis, AxisVar):
        raise IRError(f"{prim}: expected an axis of stage {stage.name!r}, got {axis!r}")
    for k, leaf in enumerate(stage.leaf_iter_vars):
        if leaf is axis:
            return k
    if axis in stage.retired:
        raise IRValueError(
            f"{prim}: axis {axis.name!r} of stage {stage.name!r} no longer exists: "
            f"{stage.retired[axis]}"
        )
    owner = stage.schedule.owner_of(axis)
    if owner is not None and owner is not stage:
        raise IRValueError(
            f"{prim}: axis {axis.name!r} belongs to stage {owner.name!r}, not {stage.name!r}"
        )
    raise IRValueError(f"{prim}: {axis.name!r} is not an axis of stage {stage.name!r}")


def _check_plain(stage: Stage, axis: AxisVar, prim: str) -> None:
    attr = stage.iter_attrs.get(axis)
    if attr is not None and not attr.is_default:
        what = attr.kind.value if not attr.pragmas else "annotated with a pragma"
        raise IRValueError(
            f"{prim}: axis {axis.name!r} of stage {stage.name!r} is already {what}; "
            f"{prim} it before annotating"
        )


def _positive(value: Any, what: str) -> PrimExpr:
    if isinstance(value, bool) or not isinstance(value, (int, IntImm)):
        raise IRError(f"{what} must be a positive integer, got {value!r}")
    v = value if isinstance(value, int) else value.value
    if v <= 0:
        raise IRValueError(f"{what} must be a positive integer, got {v}")
    return convert(v)


def _derived(parent: AxisVar, name: str) -> AxisVar:
    return AxisVar(name, parent.dtype, dom=None, iter_kind=parent.iter_kind)


def split(stage: Stage, parent: Any, factor: Any, nparts: Any) -> tuple[AxisVar, AxisVar]:
    """Replace leaf ``parent`` by ``outer, inner``; non-divisible extents get a guard."""
    k = leaf_index(stage, parent, "split")
    _check_plain(stage, parent, "split")
    if (factor is None) == (nparts is None):
        raise IRValueError(f"split: give exactly one of factor= and nparts= (axis {parent.name!r})")
    what = f"split of axis {parent.name!r} in stage {stage.name!r}: "
    f = _positive(factor, what + "factor") if factor is not None else None
    n = _positive(nparts, what + "nparts") if nparts is not None else None
    outer, inner = (
        _derived(parent, f"{parent.name}_outer"),
        _derived(parent, f"{parent.name}_inner"),
    )
    stage.relations.append(Split(parent, outer, inner, f, n))
    stage.leaf_iter_vars[k : k + 1] = [outer, inner]
    stage.all_iter_vars += [outer, inner]
    stage.retired[parent] = f"it was split into {outer.name!r} and {inner.name!r}"
    return outer, inner


def fuse(stage: Stage, *axes: Any) -> AxisVar:
    """Replace adjacent leaves (outermost first) by one fused leaf."""
    if len(axes) == 1 and isinstance(axes[0], (list, tuple)):
        axes = tuple(axes[0])
    if not axes:
        raise IRValueError(f"fuse: no axes given for stage {stage.name!r}")
    idx = [leaf_index(stage, a, "fuse") for a in axes]
    for a in axes:
        _check_plain(stage, a, "fuse")
    if idx != list(range(idx[0], idx[0] + len(idx))):
        names = [a.name for a in axes]
        order = [a.name for a in stage.leaf_iter_vars]
        raise IRValueError(
            f"fuse: axes {names} of stage {stage.name!r} must be adjacent loops listed "
            f"outermost first; the loop order is {order}"
        )
    if len({a.is_reduce for a in axes}) > 1:
        raise IRValueError(
            f"fuse: cannot fuse data-parallel and reduction axes of stage {stage.name!r} "
            f"({[a.name for a in axes]})"
        )
    fused = axes[0]
    for inner in axes[1:]:
        fused = _fuse_two(stage, fused, inner)
    return fused


def _fuse_two(stage: Stage, outer: AxisVar, inner: AxisVar) -> AxisVar:
    k = stage.leaf_iter_vars.index(outer)
    name = f"{outer.name.removesuffix('_fused')}_{inner.name}_fused"
    fused = _derived(outer, name)
    stage.relations.append(Fuse(outer, inner, fused))
    stage.leaf_iter_vars[k : k + 2] = [fused]
    stage.all_iter_vars.append(fused)
    for a in (outer, inner):
        stage.retired[a] = f"it was fused into {fused.name!r}"
    return fused


def reorder(stage: Stage, *axes: Any) -> None:
    """Place ``axes`` in the given order in the leaf positions they occupy."""
    if len(axes) == 1 and isinstance(axes[0], (list, tuple)):
        axes = tuple(axes[0])
    idx = [leaf_index(stage, a, "reorder") for a in axes]
    if len(set(idx)) != len(idx):
        raise IRValueError(f"reorder: an axis is listed twice ({[a.name for a in axes]})")
    for pos, axis in zip(sorted(idx), axes):
        stage.leaf_iter_vars[pos] = axis


def tile(
    stage: Stage, x: Any, y: Any, x_factor: Any, y_factor: Any
) -> tuple[AxisVar, AxisVar, AxisVar, AxisVar]:
    """Split ``x`` and ``y`` by their factors and reorder to (xo, yo, xi, yi)."""
    xo, xi = split(stage, x, x_factor, None)
    yo, yi = split(stage, y, y_factor, None)
    reorder(stage, xo, yo, xi, yi)
    return xo, yo, xi, yi
