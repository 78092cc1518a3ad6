"""The integer type a buffer's flat indices are computed in, and how far they can reach.

The rule (TVM's): every access into a buffer that may hold more than ``2**31 - 1`` elements is
computed in 64 bits. `FlattenBuffer` rewrites an access ``buf[i, j, ...]`` into one flat index
of type `flat_index_dtype(buf)`: int64 when the buffer's shape, strides or offset has an int64
part, or when `max_extent(buf)` (one past the largest element offset an access can reach) may
exceed ``2**31 - 1``; int32 otherwise. The extent is judged from the bounds of the dimensions: a
constant exactly, a `SizeVar` as ``[0, max]`` and any other variable as its dtype's range, so
``(n, 65536)`` with an int32 ``n`` is indexed in int64 and ``(n, 4)`` with a `SizeVar` too.

A buffer `FlattenBuffer` keeps as it is (`is_flat`: 1-D, compact, no offset) is indexed by its
accesses' own index, of its dimension's type. Such a buffer may still be declared with a
dimension whose product overflows its type (``(n * m,)`` in int32): `MakePackedAPI` then checks
the argument's element count at the entry (`needs_count_check`).
"""

from __future__ import annotations

from kiln.arith.bound import BoundAnalyzer, ConstIntBound, bound_add, bound_mul, dtype_bound
from kiln.ir.dtype import DataType
from kiln.tir.buffer import Buffer
from kiln.tir.expr import PrimExpr, as_const_int

INT32 = DataType("int", 32)
INT64 = DataType("int", 64)


def is_flat(buf: Buffer) -> bool:
    """Whether ``buf`` is already 1-D, compact and without an offset (FlattenBuffer keeps it)."""
    offset = buf.elem_offset
    return len(buf.shape) == 1 and not buf.strides and (offset is None or as_const_int(offset) == 0)


def _parts(buf: Buffer) -> list[PrimExpr]:
    offset = [buf.elem_offset] if buf.elem_offset is not None else []
    return [*buf.shape, *buf.strides, *offset]


def max_extent(buf: Buffer) -> int:
    """An upper bound of one past the largest element offset an access of ``buf`` reaches
    (dimensions by the bounds of their mathematical values: ``n * m`` may pass ``2**31``)."""
    exact = BoundAnalyzer().exact
    reach = ConstIntBound(1, 1)  # largest offset + 1
    if not buf.strides:
        for dim in buf.shape:
            reach = bound_mul(reach, exact(dim))
    else:
        for dim, stride in zip(buf.shape, buf.strides):
            last = bound_add(exact(dim), ConstIntBound(-1, -1))
            reach = bound_add(reach, bound_mul(last, exact(stride)))
    if buf.elem_offset is not None:
        reach = bound_add(reach, exact(buf.elem_offset))
    return reach.max_value


def flat_index_dtype(buf: Buffer) -> DataType:
    """The dtype of ``buf``'s flat indices (see the module docstring)."""
    parts = _parts(buf)
    if is_flat(buf):
        return parts[0].dtype
    if any(p.dtype.bits == 64 for p in parts) or max_extent(buf) - 1 > dtype_bound(INT32).max_value:
        return INT64
    return INT32


def needs_count_check(buf: Buffer) -> bool:
    """Whether a tensor matching ``buf``'s declared shape may hold more elements than its flat
    index type reaches, so the entry must check the element count. An int64 index reaches every
    tensor that exists: its bytes lie in the address space (at most ``2**57``), so a count past
    ``2**63 - 1`` is no tensor's (a ``(batch * seq,)`` buffer of int64 dims needs no check)."""
    dtype = flat_index_dtype(buf)
    return dtype.bits < 64 and max_extent(buf) - 1 > dtype_bound(dtype).max_value
