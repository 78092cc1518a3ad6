"""Data movement: ``Transpose Flatten Squeeze Unsqueeze Concat Split Slice Gather GatherND Tile
Trilu Pad OneHot DepthToSpace SpaceToDepth``.

Axes, splits, steps and pads must be known at import time (attributes or constants); Slice's
bounds may also be symbolic dims or values computed from data (read when the model runs).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kiln.errors import FrontendError
from kiln.relax import op as R
from kiln.relax.analysis.struct_info import simplify_dim
from kiln.relax.expr import Expr, PrimValue, ShapeExpr, const
from kiln.relax.frontend.common import ident
from kiln.relax.frontend.onnx import values as V
from kiln.relax.frontend.onnx.ops import (
    Ctx,
    Node,
    converter,
    dim_values,
    dtype,
    ndim,
    static_dims,
)
from kiln.relax.frontend.onnx.ops.shape import as_dim, shape_input
from kiln.tir.expr import IntImm, Max, Min, PrimExpr, Select


def axes_of(ctx: Ctx, node: Node, ins: list[Any], index: int, name: str = "axes") -> Any:
    """An axes list from the attribute (older opsets) or the input ``index`` (None if absent)."""
    if name in node.attrs:
        return list(node.attrs[name])
    if len(ins) > index and ins[index] is not None:
        return ctx.ints(ins[index], f"{node.op_type}'s {name}")
    return None


@converter("Transpose")
def _transpose(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    perm = node.attrs.get("perm")
    return ctx.emit(R.permute_dims(x, list(perm) if perm is not None else None))


def _product(items: list[Any]) -> Any:
    out: Any = 1
    for d in items:
        out = out * d
    return out


@converter("Flatten")
def _flatten(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    d = dim_values(x)
    axis = node.attrs.get("axis", 1)
    axis = axis + len(d) if axis < 0 else axis
    shape = [_product(d[:axis]), _product(d[axis:])]
    return ctx.emit(R.reshape(x, ShapeExpr([as_dim(v) for v in shape])))


@converter("Squeeze")
def _squeeze(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    axes = axes_of(ctx, node, ins, 1)
    if axes is None:
        axes = [k for k, e in enumerate(dim_values(x)) if not isinstance(e, PrimExpr) and e == 1]
    n = ndim(x)
    return ctx.emit(R.squeeze(x, sorted(a % n for a in axes)))


@converter("Unsqueeze")
def _unsqueeze(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    axes = axes_of(ctx, node, ins, 1)
    rank = ndim(x) + len(axes)
    return ctx.emit(R.expand_dims(x, sorted(a % rank for a in axes)))


@converter("Concat")
def _concat(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    parts = [ctx.expr(v) for v in ins if v is not None]
    return ctx.emit(R.concat(parts, node.attrs["axis"]))


@converter("Split")
def _split(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    axis = node.attrs.get("axis", 0) % ndim(x)
    sizes = axes_of(ctx, node, ins, 1, "split")
    count = len(node.outputs)
    n = dim_values(x)[axis]
    if sizes is None and isinstance(n, PrimExpr):
        out = ctx.emit(R.split(x, count, axis))
    else:
        if sizes is None:
            chunk = -(-n // count)
            sizes = [chunk] * (count - 1) + [n - chunk * (count - 1)]
        if len(sizes) == 1:
            return [x]
        cuts = list(np.cumsum(sizes[:-1]).tolist())
        out = ctx.emit(R.split(x, cuts, axis))
    return [ctx.emit(out[k], ident(node.outputs[k], "lv")) for k in range(count)]


@converter("Slice")
def _slice(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    """``strided_slice`` for bounds known at import time; otherwise one ``take`` of an index
    range per axis, with ONNX's rules (a negative bound counts from the end, bounds clamp to
    the axis, any nonzero step) applied to the symbolic bounds, or, for bounds that are
    run-time values, to the tensors before they are read as dims (`_run_time_bounds`)."""
    x = ctx.tensor(ins, 0)
    n = ndim(x)
    run_time = any(isinstance(v, Expr) for v in ins[1:3]) and "starts" not in node.attrs
    steps = axes_of(ctx, node, ins, 4, "steps")
    if steps is not None and 0 in steps:
        raise FrontendError("Slice's steps cannot be 0")
    if run_time:
        ins = [ins[0], *_run_time_bounds(ctx, node, ins, steps), *ins[3:]]
    starts = _bounds(ctx, node, ins, "starts", 1)
    ends = _bounds(ctx, node, ins, "ends", 2)
    axes = [a % n for a in axes_of(ctx, node, ins, 3) or range(len(starts))]
    steps = steps or [1] * len(starts)
    if all(not isinstance(v, PrimExpr) for v in (*starts, *ends)):
        big = 2**62
        starts = [max(min(int(s), big), -big) for s in starts]
        ends = [max(min(int(e), big), -big) for e in ends]
        return ctx.emit(R.strided_slice(x, axes, starts, ends, steps))
    out, sizes = x, dim_values(x)
    for a, b, e, s in zip(axes, starts, ends, steps):
        if run_time:  # clamped already; a negative step's end was read plus one
            lo, count = _count(as_dim(b), as_dim(e) - (1 if s < 0 else 0), s, sizes[a])
        else:
            lo, count = _count(*_clamped(b, e, s, sizes[a]), s, sizes[a])
        idx = R.arange(PrimValue(lo), PrimValue(simplify_dim(lo + count * s)), s, "int64")
        # NOTE: unchecked: every index of the range lies in [0, n)
        out = ctx.emit(R.take(out, ctx.emit(idx), a, mode="fast"))
    return out


def _clamped(b: Any, e: Any, step: int, n: Any) -> tuple[PrimExpr, PrimExpr]:
    """ONNX's slice bounds on an axis of extent ``n``: a negative bound counts from the end;
    then, stepping forward, both clamp to ``[0, n]``; stepping back, the start to ``[0, n-1]``
    and the end to ``[-1, n-1]``."""
    n = as_dim(n)

    def wrap(v: Any) -> PrimExpr:
        if not isinstance(v, PrimExpr):
            return as_dim(v + n if v < 0 else v) if isinstance(n, PrimExpr) else as_dim(v)
        return Select(v < IntImm("int64", 0), v + n, v)

    zero, one = IntImm("int64", 0), IntImm("int64", 1)
    if step > 0:
        return Min(Max(wrap(b), zero), n), Min(Max(wrap(e), zero), n)
    return Min(Max(wrap(b), zero), n - one), Min(Max(wrap(e), -one), n - one)


def _count(lo: PrimExpr, hi: PrimExpr, step: int, n: Any) -> tuple[PrimExpr, PrimExpr]:
    """The first index and the element count of the clamped range ``lo:hi:step``."""
    zero = IntImm("int64", 0)
    if step > 0:
        count = Max((hi - lo + (step - 1)) // step, zero)
    else:  # at most n: an empty axis clamps its start to 0 (the run-time reading)
        count = Min(Max((lo - hi + (-step - 1)) // -step, zero), as_dim(n))
    return simplify_dim(lo), simplify_dim(count)


def _run_time_bounds(ctx: Ctx, node: Node, ins: list[Any], steps: Any) -> list[Any]:
    """Slice bounds computed from data, made what ONNX means by them before they are read as
    dims (which are never negative): a negative bound counts from the end, then both clamp to
    the axis as `_clamped` says; a negative step's end (at least -1) is read plus one."""
    x = ctx.tensor(ins, 0)
    axes = axes_of(ctx, node, ins, 3)
    first = dim_values(ctx.expr(ins[1], "int64"))
    size = first[0] if len(first) == 1 else None
    if not isinstance(size, int):
        raise FrontendError("a Slice with bounds computed from data needs a known number of axes")
    n = ndim(x)
    extents = [dim_values(x)[a % n] for a in (axes or range(size))]
    ext = ctx.expr(V.sym_array(extents))
    back = const(np.array([int(s < 0) for s in steps or [1] * size], "int64"))
    zero = const(np.zeros(1, "int64"))
    out = []
    for v in ins[1:3]:
        t = ctx.expr(v, "int64")
        t = t if dtype(t) == "int64" else ctx.emit(R.astype(t, "int64"))
        out.append(ctx.emit(R.where(ctx.emit(R.less(t, zero)), ctx.emit(R.add(t, ext)), t)))
    top = ctx.emit(R.subtract(ext, back))  # a negative step starts at n - 1 at most
    start = ctx.emit(R.maximum(ctx.emit(R.minimum(out[0], top)), zero))
    end = ctx.emit(R.minimum(ctx.emit(R.maximum(ctx.emit(R.add(out[1], back)), zero)), ext))
    return [start, end]


def _bounds(ctx: Ctx, node: Node, ins: list[Any], name: str, index: int) -> list[Any]:
    if name in node.attrs:
        return list(node.attrs[name])
    return shape_input(ctx, ins[index], f"Slice's {name}")


@converter("Gather")
def _gather(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    """``take`` with ONNX's index rule: ``-n..n-1`` is valid, a negative index counts from the
    end once, and any other index is an error (at import for constant indices, at run time,
    as ``IndexError`` naming the index and the range, otherwise)."""
    x = ctx.tensor(ins, 0)
    axis = node.attrs.get("axis", 0) % ndim(x)
    idx = ins[1]
    extent = dim_values(x)[axis]
    if V.is_const(idx) and not isinstance(extent, PrimExpr):
        idx = np.asarray(idx)
        wide = idx.astype(object) if idx.dtype.kind == "u" else idx.astype(np.int64)
        bad = (wide < -extent) | (wide >= extent)
        if bad.any():
            raise FrontendError(
                f"index {int(wide[bad].flat[0])} is out of range for axis {axis} of extent "
                f"{extent} (valid: {-extent}..{extent - 1})"
            )
        fixed = np.where(wide < 0, wide + extent, wide).astype(np.int64)
        # NOTE: every index is known to be in range, so the kernel need not check them
        return ctx.emit(R.take(x, ctx.expr(fixed), axis, mode="fast"))
    return ctx.emit(R.take(x, ctx.expr(idx), axis, mode="raise"))


@converter("GatherND")
def _gather_nd(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    """``gather_nd``; an index outside ``-n..n-1`` of its axis raises at run time."""
    x, idx = ctx.tensor(ins, 0), ctx.tensor(ins, 1)
    return ctx.emit(R.gather_nd(x, idx, node.attrs.get("batch_dims", 0)))


@converter("Tile")
def _tile(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    reps = ctx.ints(ins[1], "Tile's repeats")
    d = dim_values(x)
    inter = ctx.emit(R.expand_dims(x, list(range(0, 2 * len(d), 2))))
    wide = []
    for r, e in zip(reps, d):
        wide += [r, e]
    b = ctx.emit(R.broadcast_to(inter, ShapeExpr([as_dim(v) for v in wide])))
    return ctx.emit(R.reshape(b, ShapeExpr([as_dim(r * e) for r, e in zip(reps, d)])))


@converter("Trilu")
def _trilu(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    k = ctx.ints(ins[1], "Trilu's k")[0] if len(ins) > 1 and ins[1] is not None else 0
    rows, cols = dim_values(x)[-2:]
    r = ctx.emit(R.arange(PrimValue(as_dim(0)), PrimValue(as_dim(rows)), 1, "int64"))
    c = ctx.emit(R.arange(PrimValue(as_dim(0)), PrimValue(as_dim(cols)), 1, "int64"))
    diff = ctx.emit(R.subtract(R.expand_dims(c, [0]), R.expand_dims(r, [1])))
    kk = const(np.array(k, "int64"))
    keep = R.greater_equal(diff, kk) if node.attrs.get("upper", 1) else R.less_equal(diff, kk)
    zero = const(np.zeros((), dtype=np.dtype(dtype(x))))
    return ctx.emit(R.where(ctx.emit(keep), x, zero))


@converter("Pad")
def _pad(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    mode = node.attrs.get("mode", "constant")
    if mode != "constant":
        raise FrontendError(f"Pad mode {mode!r} is not supported (only 'constant')")
    pads = list(node.attrs["pads"]) if "pads" in node.attrs else ctx.ints(ins[1], "Pad's pads")
    value = node.attrs.get("value", 0.0)
    if len(ins) > 2 and ins[2] is not None:
        value = ctx.const(ins[2], "Pad's constant_value").reshape(-1)[0].item()
    n = ndim(x)
    axes = axes_of(ctx, node, ins, 3) or list(range(n))
    k = len(axes)
    width = [0] * (2 * n)
    for i, a in enumerate(axes):
        width[2 * (a % n)] = pads[i]
        width[2 * (a % n) + 1] = pads[i + k]
    if any(w < 0 for w in width):
        raise FrontendError("negative pads are not supported")
    return ctx.emit(R.nn.pad(x, width, value))


@converter("OneHot")
def _one_hot(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    idx = ctx.tensor(ins, 0)
    depth = int(ctx.const(ins[1], "OneHot's depth").reshape(-1)[0])
    values = ctx.const(ins[2], "OneHot's values")
    axis = node.attrs.get("axis", -1) % (ndim(idx) + 1)
    idx = ctx.emit(R.astype(idx, "int64")) if dtype(idx) != "int64" else idx
    neg = R.less(idx, const(np.array(0, "int64")))
    idx = ctx.emit(R.where(neg, R.add(idx, const(np.array(depth, "int64"))), idx))
    shape = [1] * (ndim(idx) + 1)
    shape[axis] = depth
    rng = const(np.arange(depth, dtype="int64").reshape(shape))
    hit = ctx.emit(R.equal(R.expand_dims(idx, [axis]), rng))
    return ctx.emit(R.where(hit, const(values[1]), const(values[0])))


@converter("DepthToSpace", "SpaceToDepth")
def _depth_space(ctx: Ctx, node: Node, ins: list[Any]) -> Any:
    x = ctx.tensor(ins, 0)
    d = static_dims(x)
    if d is None or len(d) != 4:
        raise FrontendError(f"{node.op_type} needs a 4-D tensor of constant shape")
    b = node.attrs["blocksize"]
    n, c, h, w = d
    if node.op_type == "SpaceToDepth":
        t = R.reshape(x, [n, c, h // b, b, w // b, b])
        crd = node.attrs.get("mode", "DCR") == "CRD"  # opset 28
        t = R.permute_dims(ctx.emit(t), [0, 1, 3, 5, 2, 4] if crd else [0, 3, 5, 1, 2, 4])
        return ctx.emit(R.reshape(ctx.emit(t), [n, c * b * b, h // b, w // b]))
    if node.attrs.get("mode", "DCR") == "DCR":
        t = R.reshape(x, [n, b, b, c // (b * b), h, w])
        perm = [0, 3, 4, 1, 5, 2]
    else:
        t = R.reshape(x, [n, c // (b * b), b, b, h, w])
        perm = [0, 1, 4, 2, 5, 3]
    t = R.permute_dims(ctx.emit(t), perm)
    return ctx.emit(R.reshape(ctx.emit(t), [n, c // (b * b), h * b, w * b]))
