"""Operators that rearrange data: ``permute_dims reshape expand_dims squeeze flatten concat
split strided_slice take broadcast_to gather_elements gather_nd``.

``reshape`` takes a shape (a `ShapeExpr`, possibly with one ``-1``, or a shape-valued variable);
the element count must provably agree. ``split`` returns a tuple. Dims may be symbolic
throughout; legalization uses the constant-shape `kiln.topi` operators when every extent is a
constant and the symbolic ones of `kiln.topi.shape_ops` otherwise. Pattern: ``INJECTIVE``
(``broadcast_to``: ``BROADCAST``).
"""

from __future__ import annotations

from typing import Any

from kiln import te, topi
from kiln.errors import IRError
from kiln.ir.op import Op
from kiln.relax.analysis.struct_info import Fit, dims_fit, simplify_dim
from kiln.relax.expr import Call, Expr, ShapeExpr, Tuple
from kiln.relax.op.common import (
    as_expr,
    attrs,
    check_arity,
    describe,
    fail,
    is_one,
    normalize_axes,
    normalize_axis,
    out_dims,
    out_tensor,
    plain,
    same_dtype,
    shape_rank,
    shape_text,
    shape_values,
    tensor_sinfo,
    tuple_of_tensors,
)
from kiln.relax.op.registry import register_op
from kiln.relax.struct_info import INT64, StructInfo, TensorStructInfo, TupleStructInfo
from kiln.tir.expr import IntImm, Max, Min, PrimExpr
from kiln.topi.tag import Pattern


def _static(t: Any) -> bool:
    return all(isinstance(d, IntImm) for d in t.shape)


def _product(dims: Any) -> PrimExpr:
    out: PrimExpr = IntImm(INT64, 1)
    for d in dims:
        out = out * d
    return simplify_dim(out)


def _as_shape(shape: Any) -> Expr:
    if isinstance(shape, Expr):
        return shape
    return ShapeExpr(list(shape) if isinstance(shape, (list, tuple)) else [shape])


# -- permute_dims --------------------------------------------------------------------------------
def _infer_permute(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 1)
    x = tensor_sinfo(call, 0, "the operand")
    axes = call.attrs.get("axes")
    ndim = x.ndim if axes is None else len(axes)
    if x.ndim >= 0 and ndim != x.ndim:
        raise fail(call, f"axes {list(axes)} do not match {describe(call.args[0])}")
    if ndim < 0:
        return TensorStructInfo(None, x.dtype, -1)
    perm = (
        list(range(ndim))[::-1] if axes is None else [normalize_axis(call, a, ndim) for a in axes]
    )
    if sorted(perm) != list(range(ndim)):
        raise fail(call, f"axes {list(axes)} are not a permutation of {ndim} axes")
    dims = x.dims
    return out_tensor(None if dims is None else [dims[p] for p in perm], x.dtype, ndim)


@register_op(
    "relax.permute_dims",
    infer=_infer_permute,
    legalize=lambda call, args: topi.transpose(args[0], call.attrs.get("axes")),
    pattern=Pattern.INJECTIVE,
)
def permute_dims(x: Expr, axes: Any = None) -> Call:
    """``x`` with its axes permuted (None: reversed)."""
    return Call(Op.get("relax.permute_dims"), (as_expr(x),), attrs(axes=axes))


# -- reshape / flatten ---------------------------------------------------------------------------
def _infer_reshape(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 2)
    x = tensor_sinfo(call, 0, "the operand")
    new = shape_values(call, 1)
    if new is None:
        return TensorStructInfo(None, x.dtype, shape_rank(call, 1))
    holes = [k for k, d in enumerate(new) if isinstance(d, IntImm) and d.value == -1]
    if len(holes) > 1 or any(isinstance(d, IntImm) and d.value < -1 for d in new):
        raise fail(call, f"bad target shape {shape_text(new)}")
    if x.dims is None:
        if holes:
            return TensorStructInfo(None, x.dtype, len(new))
        return out_tensor(new, x.dtype)
    total = _product(x.dims)
    dims = list(new)
    if holes:
        known = _product(d for k, d in enumerate(new) if k != holes[0])
        if isinstance(known, IntImm) and known.value == 0:
            raise fail(call, f"cannot infer -1 in a shape holding 0 for {describe(call.args[0])}")
        dims[holes[0]] = simplify_dim(total // known)
    if dims_fit(_product(dims), total) is Fit.FAIL:
        shown = shape_text(new)
        raise fail(call, f"cannot reshape {describe(call.args[0])} into {shown}")
    return out_tensor(dims, x.dtype)


def _legalize_reshape(call: Call, args: list[Any]) -> Any:
    dims = call.struct_info.dims
    if dims is None:
        raise IRError(f"relax.reshape: the output shape of {call} is unknown; cannot legalize")
    if _static(args[0]) and all(isinstance(d, IntImm) for d in dims):
        return topi.reshape(args[0], [d.value for d in dims])
    return topi.reshape_to(args[0], out_dims(call))


@register_op(
    "relax.reshape", infer=_infer_reshape, legalize=_legalize_reshape, pattern=Pattern.INJECTIVE
)
def reshape(x: Expr, shape: Any) -> Call:
    """``x`` in row-major order with ``shape`` (one dim may be -1)."""
    return Call(Op.get("relax.reshape"), (as_expr(x), _as_shape(shape)))


def _infer_flatten(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 1)
    x = tensor_sinfo(call, 0, "the operand")
    if x.dims is None:
        return TensorStructInfo(None, x.dtype, 1)
    return out_tensor([_product(x.dims)], x.dtype)


@register_op(
    "relax.flatten",
    infer=_infer_flatten,
    legalize=lambda call, args: topi.reshape_to(args[0], out_dims(call)),
    pattern=Pattern.INJECTIVE,
)
def flatten(x: Expr) -> Call:
    """All of ``x`` as a 1-D tensor."""
    return Call(Op.get("relax.flatten"), (as_expr(x),))


# -- expand_dims / squeeze -----------------------------------------------------------------------
def _infer_expand_dims(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 1)
    x = tensor_sinfo(call, 0, "the operand")
    axes = call.attrs["axis"]
    if x.ndim < 0:
        return TensorStructInfo(None, x.dtype, -1)
    rank = x.ndim + len(axes)
    new = sorted(normalize_axis(call, a, rank) for a in axes)
    if len(set(new)) != len(new):
        raise fail(call, f"axis {list(axes)} repeats an axis")
    if x.dims is None:
        return TensorStructInfo(None, x.dtype, rank)
    src = iter(x.dims)
    return out_tensor([IntImm(INT64, 1) if d in new else next(src) for d in range(rank)], x.dtype)


@register_op(
    "relax.expand_dims",
    infer=_infer_expand_dims,
    legalize=lambda call, args: topi.expand_dims(
        args[0], [a % (len(args[0].shape) + len(call.attrs["axis"])) for a in call.attrs["axis"]]
    ),
    pattern=Pattern.INJECTIVE,
)
def expand_dims(x: Expr, axis: Any) -> Call:
    """``x`` with new extent-1 axes at ``axis`` (positions in the result)."""
    items = (axis,) if isinstance(axis, int) else tuple(axis)
    return Call(Op.get("relax.expand_dims"), (as_expr(x),), attrs(axis=items))


def _infer_squeeze(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 1)
    x = tensor_sinfo(call, 0, "the operand")
    axis = call.attrs.get("axis")
    if x.dims is None:
        ndim = -1 if axis is None or x.ndim < 0 else x.ndim - len(axis)
        return TensorStructInfo(None, x.dtype, ndim)
    if axis is None:
        if any(not isinstance(d, IntImm) for d in x.dims):
            return TensorStructInfo(None, x.dtype, -1)
        return out_tensor([d for d in x.dims if not is_one(d)], x.dtype)
    drop = normalize_axes(call, axis, x.ndim) or []
    for d in drop:
        if isinstance(x.dims[d], IntImm) and not is_one(x.dims[d]):
            raise fail(call, f"axis {d} of {describe(call.args[0])} has extent {x.dims[d]}, not 1")
    return out_tensor([e for d, e in enumerate(x.dims) if d not in drop], x.dtype)


@register_op(
    "relax.squeeze",
    infer=_infer_squeeze,
    legalize=lambda call, args: topi.squeeze(args[0], call.attrs.get("axis")),
    pattern=Pattern.INJECTIVE,
)
def squeeze(x: Expr, axis: Any = None) -> Call:
    """``x`` without extent-1 axes (``axis``: which; None: all)."""
    items = None if axis is None else ((axis,) if isinstance(axis, int) else tuple(axis))
    return Call(Op.get("relax.squeeze"), (as_expr(x),), attrs(axis=items))


# -- concat / split / strided_slice --------------------------------------------------------------
def _infer_concat(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 1)
    infos = tuple_of_tensors(call, 0)
    if not infos:
        raise fail(call, "needs at least one tensor")
    dtype = same_dtype(call, infos)
    ranks = {s.ndim for s in infos if s.ndim >= 0}
    if len(ranks) > 1:
        raise fail(call, f"tensors of different ranks {sorted(ranks)} in {describe(call.args[0])}")
    if not ranks:
        return TensorStructInfo(None, dtype, -1)
    ndim = ranks.pop()
    ax = normalize_axis(call, call.attrs["axis"], ndim)
    if any(s.dims is None for s in infos):
        return TensorStructInfo(None, dtype, ndim)
    first = infos[0].dims
    total = first[ax]
    for s in infos[1:]:
        for d in range(ndim):
            if d != ax and dims_fit(first[d], s.dims[d]) is Fit.FAIL:
                raise fail(call, f"shapes differ outside axis {ax} in {describe(call.args[0])}")
        total = total + s.dims[ax]
    return out_tensor([total if d == ax else first[d] for d in range(ndim)], dtype)


def _legalize_concat(call: Call, args: list[Any]) -> Any:
    tensors = args[0]
    if all(_static(t) for t in tensors):
        return topi.concatenate(tensors, call.attrs["axis"])
    return topi.concatenate_any(tensors, call.attrs["axis"])


@register_op(
    "relax.concat", infer=_infer_concat, legalize=_legalize_concat, pattern=Pattern.INJECTIVE
)
def concat(tensors: Any, axis: int = 0) -> Call:
    """The tensors (a tuple) joined along ``axis``."""
    tup = tensors if isinstance(tensors, Expr) else Tuple(tuple(as_expr(t) for t in tensors))
    return Call(Op.get("relax.concat"), (tup,), attrs(axis=axis))


def _split_bounds(call: Call, n: PrimExpr) -> list[tuple[PrimExpr, PrimExpr]]:
    spec = call.attrs["indices_or_sections"]
    if isinstance(spec, int):
        if spec <= 0:
            raise fail(call, f"sections must be positive, got {spec}")
        if isinstance(n, IntImm) and n.value % spec:
            raise fail(call, f"{describe(call.args[0])}: extent {n} does not split into {spec}")
        size = simplify_dim(n // spec)
        return [(simplify_dim(size * k), simplify_dim(size * (k + 1))) for k in range(spec)]
    cuts = [IntImm(INT64, 0), *(IntImm(INT64, c) for c in spec), n]
    return [(a, b) for a, b in zip(cuts, cuts[1:])]


def _infer_split(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 1)
    x = tensor_sinfo(call, 0, "the operand")
    spec = call.attrs["indices_or_sections"]
    count = spec if isinstance(spec, int) else len(spec) + 1
    if x.dims is None:
        return TupleStructInfo(tuple(TensorStructInfo(None, x.dtype, x.ndim) for _ in range(count)))
    ax = normalize_axis(call, call.attrs["axis"], x.ndim)
    n = x.dims[ax]
    outs = []
    for lo, hi in _split_bounds(call, n):
        if isinstance(n, IntImm) and isinstance(lo, IntImm) and isinstance(hi, IntImm):
            ext: PrimExpr = IntImm(INT64, len(range(*slice(lo.value, hi.value).indices(n.value))))
        else:
            ext = hi - lo
        outs.append(out_tensor([ext if d == ax else e for d, e in enumerate(x.dims)], x.dtype))
    return TupleStructInfo(tuple(outs))


def _legalize_split(call: Call, args: list[Any]) -> Any:
    x = args[0]
    ax = call.attrs["axis"] % len(x.shape)
    if _static(x):
        return topi.split(x, call.attrs["indices_or_sections"], ax)
    outs = []
    bounds = _split_bounds(call, call.args[0].struct_info.dims[ax])
    for k, (lo, _) in enumerate(bounds):
        start = lo
        outs.append(_slice_symbolic(x, ax, start, out_dims(call, k)))
    return outs


def _slice_symbolic(x: Any, ax: int, lo: Any, shape: Any) -> Any:

    def f(*i: PrimExpr) -> PrimExpr:
        idx = list(i)
        idx[ax] = i[ax] + lo
        return x[tuple(idx)]

    return te.compute(shape, f, name="T_split")


@register_op("relax.split", infer=_infer_split, legalize=_legalize_split, pattern=Pattern.INJECTIVE)
def split(x: Expr, indices_or_sections: Any, axis: int = 0) -> Call:
    """``x`` cut along ``axis`` into equal sections (an int) or at indices; returns a tuple."""
    spec = indices_or_sections
    spec = spec if isinstance(spec, int) else tuple(int(i) for i in spec)
    return Call(Op.get("relax.split"), (as_expr(x),), attrs(indices_or_sections=spec, axis=axis))


def _infer_strided_slice(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 1)
    x = tensor_sinfo(call, 0, "the operand")
    a = call.attrs
    axes, begin, end = a["axes"], a["begin"], a["end"]
    strides = a["strides"] or (1,) * len(axes)
    if not len(axes) == len(begin) == len(end) == len(strides):
        raise fail(call, "axes, begin, end and strides must have the same length")
    if any(s == 0 for s in strides):
        raise fail(call, "a stride cannot be 0")
    if x.dims is None:
        return TensorStructInfo(None, x.dtype, x.ndim)
    dims = list(x.dims)
    for ax, b, e, s in zip(axes, begin, end, strides):
        d = normalize_axis(call, ax, x.ndim)
        n = dims[d]
        if isinstance(n, IntImm):
            dims[d] = IntImm(INT64, len(range(*slice(b, e, s).indices(n.value))))
        elif s < 0:
            raise fail(call, f"a negative stride needs a constant extent on axis {d}")
        else:
            lo, hi = _clamp(n, b), _clamp(n, e)
            dims[d] = simplify_dim(Max((hi - lo + (s - 1)) // s, IntImm(INT64, 0)))
    return out_tensor(dims, x.dtype)


def _clamp(n: PrimExpr, v: int) -> PrimExpr:
    base = n + v if v < 0 else IntImm(INT64, v)
    return Min(Max(base, IntImm(INT64, 0)), n)


def _legalize_strided_slice(call: Call, args: list[Any]) -> Any:
    a, x = call.attrs, args[0]
    strides = a["strides"] or (1,) * len(a["axes"])
    if _static(x):
        return topi.strided_slice(x, a["begin"], a["end"], strides, a["axes"])
    return topi.slice_axes(x, a["axes"], a["begin"], a["end"], strides)


@register_op(
    "relax.strided_slice",
    infer=_infer_strided_slice,
    legalize=_legalize_strided_slice,
    pattern=Pattern.INJECTIVE,
)
def strided_slice(
    x: Expr, axes: Any, begin: Any, end: Any, strides: Any = None, assume_inbound: bool = False
) -> Call:
    """``x[begin:end:strides]`` on ``axes`` (Python slice rules)."""
    ints = [tuple(int(v) for v in plain(seq)) for seq in (axes, begin, end)]
    st = None if strides is None else tuple(int(v) for v in plain(strides))
    return Call(
        Op.get("relax.strided_slice"),
        (as_expr(x),),
        attrs(axes=ints[0], begin=ints[1], end=ints[2], strides=st),
    )


def index_sinfo(call: Call, i: int) -> TensorStructInfo:
    """The struct info of argument ``i``, a tensor of integer indices (a clear error else)."""
    idx = tensor_sinfo(call, i, "indices")
    if not idx.dtype.is_void and not idx.dtype.is_integer:
        raise fail(call, f"indices must be integers, got {describe(call.args[i])}")
    return idx


# -- take / broadcast_to -------------------------------------------------------------------------
def _infer_take(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 2)
    x = tensor_sinfo(call, 0, "data")
    idx = index_sinfo(call, 1)
    if call.attrs.get("mode", "raise") not in topi.transform.MODES:
        modes = ", ".join(repr(m) for m in topi.transform.MODES)
        raise fail(call, f"mode must be one of {modes}, got {call.attrs.get('mode')!r}")
    axis = call.attrs.get("axis")
    if x.dims is None or idx.dims is None:
        ndim = (
            -1 if x.ndim < 0 or idx.ndim < 0 else (x.ndim - 1 if axis is not None else 0) + idx.ndim
        )
        return TensorStructInfo(None, x.dtype, ndim)
    if axis is None:
        return out_tensor(list(idx.dims), x.dtype)
    ax = normalize_axis(call, axis, x.ndim)
    return out_tensor([*x.dims[:ax], *idx.dims, *x.dims[ax + 1 :]], x.dtype)


def _legalize_take(call: Call, args: list[Any]) -> Any:
    x, idx = args
    axis = call.attrs.get("axis")
    if axis is None and not _static(x):
        x = topi.reshape_to(x, [_product(x.shape)])
        axis = 0
    return topi.take(x, idx, axis, mode=call.attrs["mode"])


@register_op("relax.take", infer=_infer_take, legalize=_legalize_take, pattern=Pattern.INJECTIVE)
def take(x: Expr, indices: Expr, axis: int | None = None, mode: str = "raise") -> Call:
    """``numpy.take``: elements of ``x`` along ``axis`` (None: flattened) picked by ``indices``.

    ``mode`` as in `kiln.topi.take`: the default ``"raise"`` accepts ``-n..n-1`` (a negative
    index counts from the end) and raises ``IndexError`` at run time for any other index;
    ``"fast"`` (unchecked) is for callers that have proved their indices in range."""
    return Call(Op.get("relax.take"), (as_expr(x), as_expr(indices)), attrs(axis=axis, mode=mode))


def _infer_broadcast_to(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 2)
    x = tensor_sinfo(call, 0, "the operand")
    target = shape_values(call, 1)
    if target is None:
        return TensorStructInfo(None, x.dtype, shape_rank(call, 1))
    if x.dims is not None:
        if len(x.dims) > len(target):
            raise fail(call, f"cannot broadcast {describe(call.args[0])} to rank {len(target)}")
        for d, t in zip(reversed(x.dims), reversed(target)):
            if not is_one(d) and dims_fit(d, t) is Fit.FAIL:
                raise fail(
                    call, f"cannot broadcast {describe(call.args[0])} to {shape_text(target)}"
                )
    return out_tensor(target, x.dtype)


@register_op(
    "relax.broadcast_to",
    infer=_infer_broadcast_to,
    legalize=lambda call, args: topi.broadcast_to(args[0], out_dims(call)),
    pattern=Pattern.BROADCAST,
)
def broadcast_to(x: Expr, shape: Any) -> Call:
    """``x`` broadcast to ``shape``."""
    return Call(Op.get("relax.broadcast_to"), (as_expr(x), _as_shape(shape)))


# -- gather_elements ------------------------------------------------------------------------------
def _infer_gather_elements(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 2)
    x = tensor_sinfo(call, 0, "data")
    idx = index_sinfo(call, 1)
    if x.ndim >= 0 and idx.ndim >= 0 and x.ndim != idx.ndim:
        raise fail(call, f"data and indices must have the same rank ({x.ndim} vs {idx.ndim})")
    if x.ndim >= 0:
        normalize_axis(call, call.attrs["axis"], x.ndim)
    return TensorStructInfo(idx.shape, x.dtype, idx.ndim)


def _legalize_gather_elements(call: Call, args: list[Any]) -> Any:
    x, idx = args
    return topi.gather(x, call.attrs["axis"], idx, mode="raise", name="T_gather_elements")


@register_op(
    "relax.gather_elements",
    infer=_infer_gather_elements,
    legalize=_legalize_gather_elements,
    pattern=Pattern.INJECTIVE,
)
def gather_elements(x: Expr, indices: Expr, axis: int = 0) -> Call:
    """``out[i][j][k] = x[indices[i][j][k]][j][k]`` for ``axis=0`` (numpy
    ``take_along_axis``); negative indices count from the end, and an index outside
    ``-n..n-1`` raises ``IndexError`` at run time."""
    return Call(
        Op.get("relax.gather_elements"), (as_expr(x), as_expr(indices)), attrs(axis=int(axis))
    )


# -- gather_nd ------------------------------------------------------------------------------------
def _infer_gather_nd(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 2)
    x = tensor_sinfo(call, 0, "data")
    idx = index_sinfo(call, 1)
    b = call.attrs["batch_dims"]
    if x.dims is None or idx.dims is None:
        return TensorStructInfo(None, x.dtype, -1)
    k = idx.dims[-1].value if idx.dims and isinstance(idx.dims[-1], IntImm) else None
    if k is None or b < 0 or k < 1 or b + k > len(x.dims) or len(idx.dims) < b + 1:
        raise fail(
            call,
            f"indices {describe(call.args[1])} cannot address data {describe(call.args[0])} "
            f"with batch_dims={b} (the last extent must be a constant in 1..{len(x.dims) - b})",
        )
    return out_tensor([*idx.dims[:-1], *x.dims[b + k :]], x.dtype)


@register_op(
    "relax.gather_nd",
    infer=_infer_gather_nd,
    legalize=lambda call, args: topi.gather_nd(args[0], args[1], call.attrs["batch_dims"]),
    pattern=Pattern.INJECTIVE,
)
def gather_nd(x: Expr, indices: Expr, batch_dims: int = 0) -> Call:
    """ONNX ``GatherND``: the last axis of ``indices`` addresses the axes of ``x`` after its
    first ``batch_dims``; every index must lie in ``-n..n-1`` of its axis (a negative one counts
    from the end), else the kernel raises ``KernelIndexError``."""
    return Call(
        Op.get("relax.gather_nd"), (as_expr(x), as_expr(indices)), attrs(batch_dims=int(batch_dims))
    )
