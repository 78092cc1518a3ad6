"""Core ATen indexing as operator records: advanced indexing (``index.Tensor`` ->
``relax.take`` / ``relax.gather_nd``), its assignment (``index_put`` -> ``relax.scatter_nd``, a
boolean mask -> ``relax.where``), ``gather`` / ``scatter*`` (``relax.gather_elements`` /
``relax.scatter_elements``), ``slice_scatter``, ``masked_scatter``, ``as_strided`` of a dense
tensor (a ``take`` of constant offsets), ``diagonal``, ``flip``, ``repeat``, ``copy``,
``sort`` (the top-k kernel with ``k`` = the whole axis), and the ops whose sizes come from the
data (``nonzero``, an integer ``item()``), read when the model runs.

Index tensors follow torch's rules: they broadcast together; a negative index counts from the
end; when the indexed axes are adjacent the result's indexed dims stay in their place, else
they lead. Converters join `ATEN` when this module is imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kiln.errors import FrontendError
from kiln.relax import op as R
from kiln.relax.expr import Expr, TupleGetItem, const
from kiln.relax.frontend.common import ident
from kiln.relax.frontend.onnx.ops.data_dependent import nonzero_kernel
from kiln.relax.frontend.torch.aten import TorchCtx, aten, dims_of, shape_arg
from kiln.relax.op.builtin import call_pure_packed, call_tir
from kiln.relax.struct_info import ShapeStructInfo, TensorStructInfo
from kiln.runtime.vm_builtins import builtin
from kiln.tir.expr import IntImm, PrimExpr
from kiln.tir.expr import Var as TirVar
from kiln.topi.sort import topk_kernel

TENSOR_TO_SHAPE = builtin("tensor_to_shape").name


def _static(dims: list[Any], what: str) -> list[int]:
    if any(isinstance(d, PrimExpr) for d in dims):
        raise FrontendError(f"{what} needs constant dims, got {dims}")
    return [int(d) for d in dims]


def _broadcast(shapes: list[list[Any]]) -> list[Any]:
    """numpy's broadcast of ``shapes`` (a symbolic dim must meet 1 or itself)."""
    rank = max(len(s) for s in shapes)
    out: list[Any] = [1] * rank
    for s in shapes:
        for k, d in enumerate(s, rank - len(s)):
            if isinstance(d, int) and d == 1:
                continue
            if isinstance(out[k], int) and out[k] == 1:
                out[k] = d
            elif not (d is out[k] or (isinstance(d, int) and d == out[k])):
                raise FrontendError(f"index tensors of shapes {shapes} do not broadcast")
    return out


def _indices(ctx: TorchCtx, x: Expr, indices: Any) -> tuple[list[int], list[Expr]]:
    """The indexed axes of ``x`` and their int64 index tensors (no boolean masks)."""
    axes, tensors = [], []
    for k, idx in enumerate(indices):
        if idx is None:
            continue
        if str(idx.struct_info.dtype) == "bool":
            raise FrontendError(
                "indexing with a boolean mask has a data-dependent shape; use torch.where"
            )
        axes.append(k)
        tensors.append(ctx.tensor(idx, "int64"))
    return axes, tensors


def _stacked(ctx: TorchCtx, tensors: list[Expr]) -> tuple[Expr, list[Any]]:
    """The index tensors broadcast together and stacked on a new last axis, and their
    broadcast shape."""
    shape = _broadcast([dims_of(t) for t in tensors])
    parts = []
    for t in tensors:
        if dims_of(t) != shape:
            t = ctx.emit(R.broadcast_to(t, shape_arg(shape)))
        parts.append(ctx.emit(R.expand_dims(t, [len(shape)])))
    return ctx.emit(R.concat(parts, len(shape))), shape


def _leading(ctx: TorchCtx, x: Expr, axes: list[int]) -> tuple[Expr, list[int]]:
    """``x`` with ``axes`` moved to the front (in order), and the permutation."""
    rank = len(dims_of(x))
    perm = axes + [k for k in range(rank) if k not in axes]
    return (x if perm == list(range(rank)) else ctx.emit(R.permute_dims(x, perm))), perm


def _in_place(axes: list[int]) -> bool:
    """Whether torch keeps the indexed dims where the indexed axes were (adjacent axes)."""
    return axes == list(range(axes[0], axes[0] + len(axes))) and axes[0] > 0


@aten("index.Tensor", "_unsafe_index.Tensor")
def _index(ctx: TorchCtx, x: Expr, indices: Any) -> Expr:
    axes, tensors = _indices(ctx, x, indices)
    if len(axes) == 1:
        return ctx.emit(R.take(x, tensors[0], axes[0]))
    stacked, bshape = _stacked(ctx, tensors)
    moved, _ = _leading(ctx, x, axes)
    out = ctx.emit(R.gather_nd(moved, stacked))
    if not _in_place(axes):
        return out
    nb, lead = len(bshape), axes[0]
    rest = len(dims_of(out)) - nb
    perm = [*range(nb, nb + lead), *range(nb), *range(nb + lead, nb + rest)]
    return ctx.emit(R.permute_dims(out, perm))


@aten("index_put.default", "_unsafe_index_put.default")
def _index_put(
    ctx: TorchCtx, x: Expr, indices: Any, values: Expr, accumulate: bool = False
) -> Expr:
    values = ctx.tensor(values, str(x.struct_info.dtype))
    masks = [i for i in indices if i is not None and str(i.struct_info.dtype) == "bool"]
    if masks:
        return _mask_put(ctx, x, indices, values, accumulate)
    axes, tensors = _indices(ctx, x, indices)
    stacked, bshape = _stacked(ctx, tensors)
    moved, perm = _leading(ctx, x, axes)
    rest = dims_of(moved)[len(axes) :]
    nb = len(bshape)
    if _in_place(axes) and len(dims_of(values)) == nb + len(rest):
        lead = axes[0]  # NOTE: values come shaped like x[indices]: indexed dims in place
        order = [*range(lead, lead + nb), *range(lead), *range(lead + nb, nb + len(rest))]
        values = ctx.emit(R.permute_dims(values, order))
    target = [*bshape, *rest]
    if dims_of(values) != target:
        values = ctx.emit(R.broadcast_to(values, shape_arg(target)))
    out = ctx.emit(R.scatter_nd(moved, stacked, values, "add" if accumulate else "update"))
    if perm == list(range(len(perm))):
        return out
    return ctx.emit(R.permute_dims(out, [perm.index(k) for k in range(len(perm))]))


def _mask_put(ctx: TorchCtx, x: Expr, indices: Any, values: Expr, accumulate: bool) -> Expr:
    """``x[mask] = values`` for one boolean mask over the leading axes and values that
    broadcast (one value, or one per trailing element): a ``where``."""
    if len(indices) != 1:
        raise FrontendError("index_put with a boolean mask among other indices is not supported")
    mask = indices[0]
    rank, mrank = len(dims_of(x)), len(dims_of(mask))
    vdims = dims_of(values)
    if len(vdims) > rank - mrank and any(not (isinstance(d, int) and d == 1) for d in vdims):
        raise FrontendError(
            "index_put of a boolean mask with one value per selected element has a "
            "data-dependent layout; only values that broadcast are supported"
        )
    if mrank < rank:
        mask = ctx.emit(R.reshape(mask, shape_arg([*dims_of(mask), *[1] * (rank - mrank)])))
    if len(vdims) > rank - mrank:
        values = ctx.emit(R.reshape(values, shape_arg(vdims[len(vdims) - (rank - mrank) :])))
    new = ctx.emit(R.add(x, values)) if accumulate else values
    return ctx.emit(R.where(mask, new, x))


@aten("gather.default")
def _gather(ctx: TorchCtx, x: Expr, dim: int, index: Expr, sparse_grad: bool = False) -> Expr:
    return ctx.emit(R.gather_elements(x, index, dim))


REDUCE = {"sum": "add", "prod": "mul", "mean": "mean", "amax": "max", "amin": "min",
          "add": "add", "multiply": "mul"}  # fmt: skip
"""torch's reduction names -> `relax.scatter_elements`'."""


@aten("scatter.src", "scatter.value", "scatter.reduce", "scatter.value_reduce",
      "scatter_add.default", "scatter_reduce.two")  # fmt: skip
def _scatter(ctx: TorchCtx, x: Expr, dim: int, index: Expr, src: Any, reduce: Any = None,
             include_self: bool = True) -> Expr:  # fmt: skip
    dt = str(x.struct_info.dtype)
    if not isinstance(src, Expr):
        src = ctx.emit(R.full(shape_arg(dims_of(index)), ctx.tensor(src, dt), dt))
    how = "add" if "scatter_add" in str(ctx.node.target) else REDUCE.get(reduce, "update")
    return ctx.emit(R.scatter_elements(x, index, ctx.tensor(src, dt), dim, how, include_self))


@aten("slice_scatter.default")
def _slice_scatter(ctx: TorchCtx, x: Expr, src: Expr, dim: int = 0, start: Any = None,
                   end: Any = None, step: int = 1) -> Expr:  # fmt: skip
    """``x`` with ``x[start:end:step]`` along ``dim`` replaced by ``src``: a ``concat`` of the
    parts around it for step 1, a ``scatter_elements`` of the slice's positions otherwise."""
    dims = dims_of(x)
    dim %= len(dims)
    n = _static([dims[dim]], "slice_scatter")[0]
    picked = list(range(n))[slice(start, end, step)]
    if not picked:
        return x
    if step == 1:
        lo, hi = picked[0], picked[-1] + 1
        parts = [ctx.emit(R.strided_slice(x, [dim], [0], [lo]), 1)] if lo else []
        parts.append(ctx.tensor(src, str(x.struct_info.dtype)))
        if hi < n:
            parts.append(ctx.emit(R.strided_slice(x, [dim], [hi], [n]), 2))
        return ctx.emit(R.concat(parts, dim)) if len(parts) > 1 else parts[0]
    shape = [1] * len(dims)
    shape[dim] = len(picked)
    where = const(np.array(picked, "int64").reshape(shape))
    where = ctx.emit(R.broadcast_to(where, shape_arg(dims_of(src))))
    return ctx.emit(R.scatter_elements(x, where, src, dim))


@aten("masked_scatter.default")
def _masked_scatter(ctx: TorchCtx, x: Expr, mask: Expr, source: Expr) -> Expr:
    """``x`` with its masked elements, in row-major order, taken from ``source`` in order: the
    k-th true element reads ``source.flatten()[k]`` (a running count of the mask)."""
    dims = dims_of(x)
    mask = ctx.tensor(mask, "bool")
    if dims_of(mask) != dims:
        mask = ctx.emit(R.broadcast_to(mask, shape_arg(dims)))
    flat = ctx.emit(R.reshape(mask, shape_arg([-1])))
    rank = ctx.emit(R.cumsum(ctx.emit(R.astype(flat, "int64")), 0))
    pos = ctx.emit(R.maximum(ctx.emit(R.subtract(rank, ctx.tensor(1, "int64"))),
                             ctx.tensor(0, "int64")))  # fmt: skip
    src = ctx.emit(R.reshape(source, shape_arg([-1])))
    picked = ctx.emit(R.take(src, pos, 0, mode="clip"))
    return ctx.emit(R.where(mask, ctx.emit(R.reshape(picked, shape_arg(dims))), x))


@aten("as_strided.default", "as_strided_copy.default")
def _as_strided(ctx: TorchCtx, x: Expr, size: Any, stride: Any, offset: Any = None) -> Expr:
    """The view of ``x``'s storage with ``size``, ``stride`` and ``offset``: ``x`` must be dense
    (its strides a permutation of a row-major layout, from its own storage's start); the view
    is a ``take`` of the constant storage offsets (a reshape where it is one)."""
    val = ctx.node.args[0].meta.get("val")
    if val is None:
        raise FrontendError("as_strided of a value without metadata")
    shape = _static(list(val.shape), "as_strided")
    order = sorted(range(len(shape)), key=lambda k: -val.stride()[k])
    dense, step = True, 1
    for k in reversed(order):
        dense = dense and (shape[k] == 1 or val.stride()[k] == step)
        step *= shape[k]
    if not dense or val.storage_offset() != 0:
        raise FrontendError(
            f"as_strided of a tensor that is not dense (strides {list(val.stride())}, offset "
            f"{val.storage_offset()}) is not supported"
        )
    size, stride = _static(list(size), "as_strided"), _static(list(stride), "as_strided")
    if order != sorted(order):
        x = ctx.emit(R.permute_dims(x, order))
    storage = ctx.emit(R.reshape(x, shape_arg([-1])))
    at = np.full(size, int(offset or 0), "int64")
    for k, (n, s) in enumerate(zip(size, stride)):
        at += (np.arange(n, dtype="int64") * s).reshape([-1 if j == k else 1 for j in
                                                         range(len(size))])  # fmt: skip
    if at.size == step and np.array_equal(at.reshape(-1), np.arange(step)):
        return ctx.emit(R.reshape(storage, shape_arg(size)))  # NOTE: a reshape of the storage
    return ctx.emit(R.take(storage, const(at), 0))


@aten("diagonal.default", "diagonal_copy.default")
def _diagonal(ctx: TorchCtx, x: Expr, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Expr:
    """The diagonal of the ``(dim1, dim2)`` planes, moved to the last axis: the two axes go
    last, merge into one, and a ``take`` picks ``i * n2 + i + offset``."""
    dims = dims_of(x)
    rank = len(dims)
    d1, d2 = dim1 % rank, dim2 % rank
    n1, n2 = _static([dims[d1], dims[d2]], "diagonal")
    perm = [k for k in range(rank) if k not in (d1, d2)] + [d1, d2]
    moved = ctx.emit(R.permute_dims(x, perm))
    rows = range(max(0, -offset), min(n1, n2 - offset))
    merged = ctx.emit(R.reshape(moved, shape_arg([dims[k] for k in perm[:-2]] + [n1 * n2])))
    picks = const(np.array([r * n2 + r + offset for r in rows], "int64"))
    return ctx.emit(R.take(merged, picks, rank - 2))


@aten("flip.default")
def _flip(ctx: TorchCtx, x: Expr, dims: Any) -> Expr:
    rank = len(dims_of(x))
    axes = sorted({d % rank for d in dims})
    if not axes:
        return x
    big = 2**62
    return ctx.emit(R.strided_slice(x, axes, [-1] * len(axes), [-big] * len(axes),
                                    [-1] * len(axes)))  # fmt: skip


@aten("repeat.default")
def _repeat(ctx: TorchCtx, x: Expr, repeats: Any) -> Expr:
    """``x`` tiled ``repeats`` times per axis: each axis gets a leading extent-1 axis that is
    broadcast to its count, then the pairs merge."""
    dims = dims_of(x)
    reps = [int(r) for r in repeats]
    dims = [1] * (len(reps) - len(dims)) + dims
    paired = shape_arg([v for d in dims for v in (1, d)])
    wide = shape_arg([v for r, d in zip(reps, dims) for v in (r, d)])
    out = ctx.emit(R.broadcast_to(ctx.emit(R.reshape(x, paired)), wide))
    return ctx.emit(R.reshape(out, shape_arg([r * d for r, d in zip(reps, dims)])))


@aten("copy.default")
def _copy(ctx: TorchCtx, x: Expr, src: Any, non_blocking: bool = False) -> Expr:
    """``x``'s shape and dtype filled from ``src`` (broadcast and cast)."""
    out = ctx.tensor(src, str(x.struct_info.dtype))
    if dims_of(out) != dims_of(x):
        out = ctx.emit(R.broadcast_to(out, shape_arg(dims_of(x))))
    return out


@aten("sort.default", "sort.stable")
def _sort(ctx: TorchCtx, x: Expr, *args: Any, **kwargs: Any) -> tuple[Expr, Expr]:
    """Values and int64 indices in order along ``dim`` (ties in index order, NaN above every
    number): the top-k kernel (`kiln.topi.sort.topk_kernel`) with ``k`` the axis' extent."""
    if "stable" in str(ctx.node.target):
        dim, descending = kwargs.get("dim", -1), kwargs.get("descending", False)
    else:
        dim = args[0] if args else kwargs.get("dim", -1)
        descending = args[1] if len(args) > 1 else kwargs.get("descending", False)
    dims = _static(dims_of(x), "sort")
    axis = dim % len(dims)
    dt = str(x.struct_info.dtype)
    gv = ctx.bb.add_func(topk_kernel(dims, axis, dims[axis], bool(descending), dt), "sort")
    out = [IntImm("int64", d) for d in dims]
    sinfo = [TensorStructInfo(out, dt), TensorStructInfo(out, "int64")]
    pair = ctx.emit(call_tir(gv, [x], sinfo))
    return ctx.emit(TupleGetItem(pair, 0), 1), ctx.emit(TupleGetItem(pair, 1), 2)


# -- data-dependent sizes ------------------------------------------------------------------------
def run_time_int(ctx: TorchCtx, value: Expr, what: str) -> TirVar:
    """A fresh symbolic int bound, when the model runs, to ``value`` (one integer element):
    ``vm.builtin.tensor_to_shape`` matched to a new dim, so what it sizes keeps its rank."""
    flat = ctx.emit(R.reshape(ctx.tensor(value, "int64"), shape_arg([1])))
    name = ident(f"{ctx.node.name}_{what}", "n")
    shape = ctx.bb.emit(
        call_pure_packed(TENSOR_TO_SHAPE, flat, sinfo_args=ShapeStructInfo(None, 1)), name
    )
    n = TirVar(name, "int64")
    ctx.bb.match_cast(shape, ShapeStructInfo([n]), f"{name}_dims")
    return n


@aten("nonzero.default")
def _nonzero(ctx: TorchCtx, x: Expr) -> Expr:
    """The coordinates ``[count, rank]`` of the non-zero elements in row-major order: their
    count is read when the model runs, then one serial pass writes them
    (`kiln.relax.frontend.onnx.ops.data_dependent.nonzero_kernel`, ONNX's ``NonZero``)."""
    dims = dims_of(x)
    if not dims:
        raise FrontendError("nonzero of a 0-d tensor is not supported (give it one dim)")
    dt = str(x.struct_info.dtype)
    mask = x if dt == "bool" else ctx.emit(R.not_equal(x, ctx.tensor(0, dt)))
    count = ctx.emit(R.sum(ctx.emit(R.astype(mask, "int64"))))
    n = run_time_int(ctx, count, "count")
    gv = ctx.bb.add_func(nonzero_kernel(dims, dt), "nonzero")
    coords = ctx.emit(call_tir(gv, [x], TensorStructInfo([IntImm("int64", len(dims)), n], "int64")))
    return ctx.emit(R.permute_dims(coords, [1, 0]))


@aten("_local_scalar_dense.default", "item.default")
def _item(ctx: TorchCtx, x: Expr) -> Any:
    """A tensor's one value as a number: its value when it is a constant; an integer computed
    by the model is read when the model runs (a symbolic int, for the sizes it sets)."""
    data = getattr(x, "data", None)
    if isinstance(data, np.ndarray) and data.size == 1:
        return data.reshape(()).item()
    if not str(x.struct_info.dtype).startswith(("int", "uint")):
        raise FrontendError(
            f"tensor.item() of a {x.struct_info.dtype} value computed by the model: kiln reads "
            "only integers (for sizes) when the model runs"
        )
    return run_time_int(ctx, x, "item")
