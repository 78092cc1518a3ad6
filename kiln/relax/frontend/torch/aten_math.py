"""Core ATen math beyond `kiln.relax.frontend.torch.aten`'s: logic and bits, ``atan2`` and
tensor bounds of ``clamp``, the reductions torch names apart (``any``, ``max.dim`` with its
indices, whole-tensor ``mean`` / ``prod``, vector norms, ``cumsum``), creation ops whose values
do not matter (``empty``) and the ``resize`` ``resize_`` becomes, the size queries torch records
on dynamic dims (``sym_numel``, ``sym_stride``...),
inference-mode dropout and the batch / group statistics of normalizations.

Converters join `ATEN` when this module is imported; each is a few operator records.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kiln.arith import simplify
from kiln.errors import FrontendError
from kiln.relax import op as R
from kiln.relax.expr import Expr, TupleGetItem, const
from kiln.relax.frontend.torch.aten import ATEN, TorchCtx, aten, dims_of, shape_arg
from kiln.tir.expr import IntImm, PrimExpr

LOGICAL = {"logical_and": R.logical_and, "logical_or": R.logical_or,
           "logical_xor": R.logical_xor}  # fmt: skip
BITWISE = {"bitwise_and": (R.bitwise_and, R.logical_and),
           "bitwise_or": (R.bitwise_or, R.logical_or),
           "bitwise_xor": (R.bitwise_xor, R.logical_xor)}  # fmt: skip
"""``aten.bitwise_*``: the integer record, and the logical one for ``bool`` operands."""


def _logical(fn: Any) -> Any:
    def conv(ctx: TorchCtx, a: Any, b: Any) -> Expr:
        return ctx.emit(fn(ctx.tensor(a, "bool"), ctx.tensor(b, "bool")))

    return conv


def _bitwise(ints: Any, bools: Any) -> Any:
    def conv(ctx: TorchCtx, a: Any, b: Any) -> Expr:
        dt = ctx.out_dtype
        fn = bools if dt == "bool" else ints
        return ctx.emit(fn(ctx.tensor(a, dt), ctx.tensor(b, dt)))

    return conv


for _name, _fn in LOGICAL.items():
    ATEN[f"aten.{_name}.default"] = _logical(_fn)
for _name, (_ints, _bools) in BITWISE.items():
    for _ov in ("Tensor", "Scalar"):
        ATEN[f"aten.{_name}.{_ov}"] = _bitwise(_ints, _bools)


@aten("logical_not.default")
def _logical_not(ctx: TorchCtx, x: Expr) -> Expr:
    return ctx.emit(R.logical_not(ctx.tensor(x, "bool")))


@aten("bitwise_not.default")
def _bitwise_not(ctx: TorchCtx, x: Expr) -> Expr:
    return ctx.emit(R.logical_not(x) if ctx.out_dtype == "bool" else R.bitwise_not(x))


@aten("atan2.default")
def _atan2(ctx: TorchCtx, a: Expr, b: Expr) -> Expr:
    return ctx.emit(R.atan2(ctx.tensor(a), ctx.tensor(b)))


@aten("clamp.Tensor")
def _clamp_tensor(ctx: TorchCtx, x: Expr, lo: Any = None, hi: Any = None) -> Expr:
    """``max(x, lo)`` then ``min(., hi)``, as torch orders them (``lo > hi`` gives ``hi``)."""
    out = ctx.tensor(x)
    if lo is not None:
        out = ctx.emit(R.maximum(out, ctx.tensor(lo)))
    if hi is not None:
        out = ctx.emit(R.minimum(out, ctx.tensor(hi)))
    return out


# -- reductions ----------------------------------------------------------------------------------
def _axes(dims: Any) -> list[int] | None:
    if dims is None or (isinstance(dims, (list, tuple)) and not dims):
        return None
    return [dims] if isinstance(dims, int) else list(dims)


@aten("any.default", "any.dim", "any.dims", "all.default", "all.dim", "all.dims")
def _any(ctx: TorchCtx, x: Expr, dims: Any = None, keepdim: bool = False) -> Expr:
    """Whether any (all) element along ``dims`` is non-zero: the max (min) of the truth values
    as ``uint8``."""
    truth = ctx.emit(R.astype(ctx.tensor(x, "bool"), "uint8"))
    fn = R.min if "aten.all" in str(ctx.node.target) else R.max
    return ctx.emit(R.astype(ctx.emit(fn(truth, _axes(dims), keepdim)), "bool"))


@aten("max.dim", "min.dim")
def _max_dim(ctx: TorchCtx, x: Expr, dim: int, keepdim: bool = False) -> tuple[Expr, Expr]:
    """The extreme values along ``dim`` and the index of the first of each."""
    is_max = "aten.max" in str(ctx.node.target)
    values = ctx.emit((R.max if is_max else R.min)(x, [dim], keepdim), 1)
    return values, ctx.emit((R.argmax if is_max else R.argmin)(x, dim, keepdim), 2)


@aten("max.default", "min.default")
def _max_all(ctx: TorchCtx, x: Expr) -> Expr:
    return ctx.emit((R.max if "aten.max" in str(ctx.node.target) else R.min)(x))


@aten("mean.default", "prod.default", "sum.default")
def _whole(ctx: TorchCtx, x: Expr, dtype: Any = None) -> Expr:
    name = str(ctx.node.target).split(".")[1]
    fn = {"mean": R.mean, "prod": R.prod, "sum": R.sum}[name]
    return ctx.emit(fn(ctx.tensor(x), None, False))


@aten("cumsum.default")
def _cumsum(ctx: TorchCtx, x: Expr, dim: int, dtype: Any = None) -> Expr:
    return ctx.emit(R.cumsum(ctx.tensor(x), dim))


@aten("linalg_vector_norm.default")
def _vector_norm(ctx: TorchCtx, x: Expr, ord: Any = 2, dim: Any = None, keepdim: bool = False,
                 dtype: Any = None) -> Expr:  # fmt: skip
    """``(sum |x|**ord) ** (1/ord)`` along ``dim``; ``ord`` inf / -inf: the max / min of
    ``|x|``, 0: the count of non-zeros."""
    x = ctx.tensor(x)
    mag = ctx.emit(R.abs(x))
    axes = _axes(dim)
    if ord in (float("inf"), float("-inf")):
        return ctx.emit((R.max if ord > 0 else R.min)(mag, axes, keepdim))
    if ord == 0:
        nonzero = ctx.emit(R.astype(R.not_equal(x, ctx.tensor(0)), ctx.out_dtype))
        return ctx.emit(R.sum(nonzero, axes, keepdim))
    if ord == 1:
        return ctx.emit(R.sum(mag, axes, keepdim))
    if ord == 2:
        return ctx.emit(R.sqrt(ctx.emit(R.sum(ctx.emit(R.multiply(x, x)), axes, keepdim))))
    powered = ctx.emit(R.power(mag, ctx.tensor(float(ord))))
    total = ctx.emit(R.sum(powered, axes, keepdim))
    return ctx.emit(R.power(total, ctx.tensor(1.0 / float(ord))))


# -- creation and sizes --------------------------------------------------------------------------
@aten("empty.memory_format", "empty_strided.default", "new_empty.default", "zeros.default")
def _empty(ctx: TorchCtx, *args: Any, **kwargs: Any) -> Expr:
    """A tensor whose values the program overwrites before reading (torch leaves them
    undefined): zeros."""
    sizes = args[0] if isinstance(args[0], (list, tuple)) else args[1]
    return ctx.emit(R.zeros(shape_arg(sizes), ctx.out_dtype))


SHAPE_READERS = frozenset({
    "aten.full_like.default", "aten.empty_like.default", "aten.zeros_like.default",
    "aten.ones_like.default", "aten.rand_like.default", "aten.randn_like.default",
    "aten.sym_size.int", "aten.sym_numel.default", "aten.sym_stride.int",
})  # fmt: skip
"""Ops that read only their operand's shape and dtype, never its values."""


def _count(dims: Any) -> Any:
    """The element count of ``dims``: an int, or a simplified `tir` expression."""
    total: Any = 1
    for d in dims:
        total = total * d
    if isinstance(total, PrimExpr):
        total = simplify(total)
        return total.value if isinstance(total, IntImm) else total
    return total


@aten("resize.default")
def _resize(ctx: TorchCtx, x: Expr, size: Any, memory_format: Any = None) -> Expr:
    """``resize_`` as functionalization leaves it: ``x``'s elements, in order, as far as they
    reach (the same count: a reshape; fewer: the first ones), then new elements, which torch
    leaves uninitialized. A tensor that had none, or one whose values the program never reads
    (only its shape, as ``fill_`` -> ``full_like``), is zeros. New elements the program reads
    would be garbage in torch: refused."""
    old, new = _count(dims_of(x)), _count(size)
    if _count([old - new]) == 0:
        return ctx.emit(R.reshape(x, shape_arg(size)))
    if old == 0 or all(str(u.target) in SHAPE_READERS for u in ctx.node.users):
        return ctx.emit(R.zeros(shape_arg(size), ctx.out_dtype))
    if isinstance(old, int) and isinstance(new, int) and new < old:
        flat = ctx.emit(R.reshape(x, shape_arg([old])))
        first = ctx.emit(R.strided_slice(flat, [0], [0], [new]))
        return ctx.emit(R.reshape(first, shape_arg(size)))
    raise FrontendError(
        f"resize_ from {list(dims_of(x))} to {list(size)} adds elements that torch leaves "
        "uninitialized, and the program reads them; fill the tensor after resizing it, or "
        "build it at its final size (torch.cat, torch.nn.functional.pad)"
    )


@aten("sym_numel.default")
def _numel(ctx: TorchCtx, x: Expr) -> Any:
    total: Any = 1
    for d in dims_of(x):
        total = total * d
    return total


@aten("sym_stride.int")
def _stride(ctx: TorchCtx, x: Expr, dim: int) -> Any:
    """The stride of a dense row-major tensor (kiln's tensors are)."""
    total: Any = 1
    for d in dims_of(x)[dim % len(dims_of(x)) + 1 :]:
        total = total * d
    return total


@aten("sym_storage_offset.default")
def _offset(ctx: TorchCtx, x: Expr) -> int:
    return 0


@aten("sym_is_contiguous.default")
def _contiguous(ctx: TorchCtx, x: Expr, *args: Any) -> bool:
    return True


@aten("native_dropout.default", "dropout.default")
def _dropout(ctx: TorchCtx, x: Expr, p: float, train: bool | None = False) -> Any:
    """Dropout as inference runs it: ``x`` (and an all-true mask). Training-mode dropout is
    random: export the module in ``eval()`` mode."""
    if train and p > 0:
        raise FrontendError(
            f"dropout with p={p} in training mode is random; export the model in eval() mode"
        )
    if "native_dropout" not in str(ctx.node.target):
        return x
    return x, ctx.emit(R.ones(shape_arg(dims_of(x)), "bool"), 1)


# -- normalization statistics --------------------------------------------------------------------
@aten("_native_batch_norm_legit.no_stats", "_native_batch_norm_legit.default",
      "_native_batch_norm_legit_functional.default")  # fmt: skip
def _batch_norm_batch_stats(ctx: TorchCtx, x: Expr, w: Any, b: Any, *rest: Any) -> tuple:
    """Batch norm with the batch's own statistics (a module in ``train()`` mode, or without
    running statistics): the mean and biased variance over every axis but the channels; with
    running statistics and ``training=False`` those. Returns the output, the mean and ``1 /
    std``, and (the functional form) the updated running statistics."""
    running = rest[:2] if len(rest) == 5 else (None, None)
    training, momentum, eps = rest[-3], float(rest[-2]), float(rest[-1])
    dims = dims_of(x)
    axes = [0, *range(2, len(dims))]
    if training or running[0] is None:
        mean = ctx.emit(R.mean(x, axes, False), 1)
        var = ctx.emit(R.variance(x, axes, False), 2)
    else:
        mean, var = running
    c = dims[1]
    w = w if w is not None else const(np.ones([c], ctx.out_dtype))
    b = b if b is not None else const(np.zeros([c], ctx.out_dtype))
    out = ctx.emit(R.nn.batch_norm(x, w, b, mean, var, 1, eps))
    rstd = ctx.emit(R.rsqrt(ctx.emit(R.add(var, ctx.tensor(eps)))), 3)
    result = (ctx.emit(TupleGetItem(out, 0), 4), mean, rstd)
    if "functional" not in str(ctx.node.target):
        return result
    if not training:
        return (*result, *running)
    n = float(np.prod([int(dims[a]) for a in axes]))
    unbiased = ctx.emit(R.multiply(var, ctx.tensor(n / max(n - 1.0, 1.0))))
    keep, take = ctx.tensor(1.0 - momentum), ctx.tensor(momentum)
    new = [ctx.emit(R.add(R.multiply(old, keep), R.multiply(now, take)), 5 + k)
           for k, (old, now) in enumerate(zip(running, (mean, unbiased)))]  # fmt: skip
    return (*result, *new)


@aten("native_group_norm.default")
def _group_norm(ctx: TorchCtx, x: Expr, w: Any, b: Any, n: Any, c: Any, hw: Any, groups: int,
                eps: float) -> tuple:  # fmt: skip
    """``x`` normalized over each group of ``C / groups`` channels (and the spatial axes),
    then scaled per channel; also the per-group mean and ``1 / std`` ``[N, groups]``."""
    dims = dims_of(x)
    grouped = ctx.emit(R.reshape(x, shape_arg([dims[0], groups, -1])), 1)
    mean = ctx.emit(R.mean(grouped, [2], True), 2)
    var = ctx.emit(R.variance(grouped, [2], True), 3)
    rstd = ctx.emit(R.rsqrt(ctx.emit(R.add(var, ctx.tensor(eps)))), 4)
    normed = ctx.emit(R.multiply(ctx.emit(R.subtract(grouped, mean)), rstd))
    out = ctx.emit(R.reshape(normed, shape_arg(dims)))
    per_channel = [-1] + [1] * (len(dims) - 2)
    if w is not None:
        out = ctx.emit(R.multiply(out, ctx.emit(R.reshape(w, per_channel))))
    if b is not None:
        out = ctx.emit(R.add(out, ctx.emit(R.reshape(b, per_channel))))
    flat = shape_arg([dims[0], groups])
    return out, ctx.emit(R.reshape(mean, flat), 5), ctx.emit(R.reshape(rstd, flat), 6)


SYM_COMPARE = {
    "ge": lambda a, b: a >= b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "lt": lambda a, b: a < b,
    "eq": lambda a, b: a.eq(b) if isinstance(a, PrimExpr) else a == b,
    "ne": lambda a, b: a.ne(b) if isinstance(a, PrimExpr) else a != b,
}
"""Comparisons torch records on sizes (the checks it asserts on data-dependent ones)."""
for _name, _fn in SYM_COMPARE.items():
    ATEN[f"_operator.{_name}"] = (lambda f: lambda ctx, a, b: f(a, b))(_fn)
