"""Matrix products as tensor expressions: `matmul`, `dense` and `batch_matmul`.

These are the target-independent definitions (one reduction each, ``C[i, j] = sum_k A[i, k] *
B[k, j]``), which every backend can schedule and which serve as the reference. The CPU versions
in `kiln.topi.x86.dense` compute the same values through packed, padded stages that its
schedules turn into register-blocked kernels.

Every operator checks its operands and raises `IRError` naming the operator and the tensor:
``matmul: inner dimensions differ: A 'x' (4, 3) has 3 columns but B 'w' (5, 6) has 5 rows``.
Shapes may be symbolic; constant shapes are checked when the operator is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kiln import te
from kiln.errors import IRError, IRValueError
from kiln.te import Tensor
from kiln.tir.expr import IntImm, PrimExpr, convert
from kiln.topi.tag import Pattern, attrs_for
from kiln.topi.utils import check_numeric, check_tensor, const_int, same_dim, show_shape

MATMUL = "matmul"
DENSE = "dense"
BATCH_MATMUL = "batch_matmul"
"""Tags of the matrix-product computes (pattern ``OUT_ELEMWISE_FUSABLE``)."""


@dataclass(frozen=True)
class MatmulDims:
    """The sizes of ``op(A) @ op(B)``: ``batch`` (empty for 2-D), ``n`` rows, ``m`` columns and the
    reduction length ``k``; ``a_batch`` / ``b_batch`` say whether each operand has its own batch
    (a batch of 1 is broadcast)."""

    batch: tuple[PrimExpr, ...]
    n: PrimExpr
    m: PrimExpr
    k: PrimExpr
    a_batch: bool
    b_batch: bool


def _is_one(d: PrimExpr) -> bool:
    return isinstance(d, IntImm) and d.value == 1


def _check_pair(op: str, a: Any, b: Any, rank: int) -> tuple[Tensor, Tensor]:
    a = check_tensor(op, a, "the first operand")
    b = check_tensor(op, b, "the second operand")
    for t in (a, b):
        if t.ndim != rank:
            raise IRValueError(
                f"{op}: tensor {t.name!r} must have rank {rank}, got shape {show_shape(t)}"
            )
        check_numeric(op, t)
    if a.dtype != b.dtype:
        raise IRError(
            f"{op}: tensors {a.name!r} ({a.dtype}) and {b.name!r} ({b.dtype}) have different "
            "dtypes; cast one first"
        )
    return a, b


def matmul_dims(op: str, a: Any, b: Any, transpose_a: bool, transpose_b: bool) -> MatmulDims:
    """Check the operands of a (batched) matrix product and return its sizes."""
    rank = 3 if op == BATCH_MATMUL else 2
    a, b = _check_pair(op, a, b, rank)
    *ab, a0, a1 = a.shape
    *bb, b0, b1 = b.shape
    n, ka = (a1, a0) if transpose_a else (a0, a1)
    kb, m = (b1, b0) if transpose_b else (b0, b1)
    if not same_dim(ka, kb):
        raise IRValueError(
            f"{op}: inner dimensions differ: {a.name!r} {show_shape(a)} has {_show(ka)} "
            f"{'rows' if transpose_a else 'columns'} but {b.name!r} {show_shape(b)} has "
            f"{_show(kb)} {'columns' if transpose_b else 'rows'}"
        )
    batch: tuple[PrimExpr, ...] = ()
    if ab:
        if not (same_dim(ab[0], bb[0]) or _is_one(ab[0]) or _is_one(bb[0])):
            raise IRValueError(
                f"{op}: batch sizes differ: {a.name!r} {show_shape(a)} and {b.name!r} "
                f"{show_shape(b)} (a batch of 1 broadcasts)"
            )
        batch = (bb[0] if _is_one(ab[0]) else ab[0],)
        return MatmulDims(batch, n, m, ka, not _is_one(ab[0]), not _is_one(bb[0]))
    return MatmulDims(batch, n, m, ka, False, False)


def _show(d: PrimExpr) -> str:
    c = const_int(d)
    return str(c) if c is not None else str(getattr(d, "name", d))


def read_a(a: Tensor, dims: MatmulDims, b: tuple[Any, ...], i: Any, k: Any, trans: bool) -> Any:
    """``op(A)[b..., i, k]`` (a broadcast batch reads index 0)."""
    lead = tuple(b) if dims.a_batch else tuple(convert(0, x.dtype) for x in b)
    return a[(*lead, k, i)] if trans else a[(*lead, i, k)]


def read_b(bt: Tensor, dims: MatmulDims, b: tuple[Any, ...], k: Any, j: Any, trans: bool) -> Any:
    """``op(B)[b..., k, j]`` (a broadcast batch reads index 0)."""
    lead = tuple(b) if dims.b_batch else tuple(convert(0, x.dtype) for x in b)
    return bt[(*lead, j, k)] if trans else bt[(*lead, k, j)]


def _product(op: str, a: Any, b: Any, transpose_a: bool, transpose_b: bool, name: str) -> Tensor:
    dims = matmul_dims(op, a, b, transpose_a, transpose_b)
    k = te.reduce_axis(dims.k, name="k")
    nb = len(dims.batch)

    def body(*idx: Any) -> Any:
        lead, i, j = idx[:nb], idx[nb], idx[nb + 1]
        x = read_a(a, dims, lead, i, k, transpose_a)
        y = read_b(b, dims, lead, k, j, transpose_b)
        return te.sum(x * y, axis=k)

    attrs = attrs_for(
        op, Pattern.OUT_ELEMWISE_FUSABLE, transpose_a=transpose_a, transpose_b=transpose_b
    )
    return te.compute((*dims.batch, dims.n, dims.m), body, name=name, tag=op, attrs=attrs)


def matmul(
    a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False, name: str = "matmul"
) -> Tensor:
    """``op(a) @ op(b)`` for 2-D tensors, where ``op`` transposes when asked."""
    return _product(MATMUL, a, b, transpose_a, transpose_b, name)


def batch_matmul(
    a: Any,
    b: Any,
    transpose_a: bool = False,
    transpose_b: bool = False,
    name: str = "batch_matmul",
) -> Tensor:
    """``op(a[t]) @ op(b[t])`` for each batch index ``t`` of 3-D tensors (a batch of 1 is
    broadcast)."""
    return _product(BATCH_MATMUL, a, b, transpose_a, transpose_b, name)


def check_bias(op: str, bias: Any, m: PrimExpr, dtype: Any) -> Tensor:
    """``bias`` when it is a 1-D tensor of ``m`` elements of ``dtype``."""
    bias = check_tensor(op, bias, "bias")
    if bias.ndim != 1 or not same_dim(bias.shape[0], m):
        raise IRError(
            f"{op}: bias {bias.name!r} must have shape ({_show(m)},), got {show_shape(bias)}"
        )
    if bias.dtype != dtype:
        raise IRError(f"{op}: bias {bias.name!r} has dtype {bias.dtype}, expected {dtype}")
    return bias


def dense(x: Any, w: Any, bias: Any = None, name: str = "dense") -> Tensor:
    """``x @ w.T (+ bias)``: ``x`` is (batch, in_features), ``w`` (out_features, in_features)."""
    out = _product(DENSE, x, w, False, True, name if bias is None else f"{name}_matmul")
    if bias is None:
        return out
    bias = check_bias(DENSE, bias, out.shape[1], out.dtype)
    return te.compute(
        out.shape,
        lambda i, j: out[i, j] + bias[j],
        name=name,
        tag="broadcast",
        attrs=attrs_for("broadcast", Pattern.BROADCAST),
    )
