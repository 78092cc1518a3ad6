"""FlattenBuffer: rewrite every N-D buffer access as a 1-D access of the same memory.

Precondition: a well-formed module; buffers have no ``axis_separators``.
Postcondition: every `BufferLoad` / `BufferStore` in a function body indexes a 1-D buffer with no
strides and no element offset, whose data variable is the original buffer's. The flat index is
``elem_offset + sum(index[d] * stride[d])`` with the buffer's declared strides, or row-major
strides computed from its shape. A vector (`Ramp`) index in the last dimension stays a `Ramp`.
`DeclBuffer` statements declare the flat buffer. Parameter buffer maps keep their N-D buffers:
they describe the arguments (MakePackedAPI checks shapes from them).

The flat index is simplified by `kiln.arith` (``i * 1``, ``0 + j``, ``4 * 8`` fold). Its type is
`kiln.tir.analysis.buffer_index.flat_index_dtype`: int64 when any dimension, stride or offset is
int64, or when the buffer may hold more than ``2**31 - 1`` elements (a constant size, or
symbolic dimensions whose product may pass it); an int64 index is int64 too. Narrower indices are
cast to it before they are multiplied, so no intermediate of the flat index overflows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from kiln.arith import simplify
from kiln.errors import PassError
from kiln.ir.dtype import DataType
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.transform import PassContext
from kiln.ir.visitor import MemoMutator
from kiln.tir.analysis.buffer_index import INT64, flat_index_dtype, is_flat
from kiln.tir.buffer import Buffer
from kiln.tir.expr import Add, Broadcast, BufferLoad, Cast, IntImm, Mul, PrimExpr, Ramp
from kiln.tir.function import PrimFunc, PrimFuncPass
from kiln.tir.stmt import BufferStore, DeclBuffer


@dataclass(frozen=True)
class FlattenBuffer(PrimFuncPass):
    """Turn N-D buffer accesses into 1-D accesses of the same data pointer (see module doc)."""

    name: ClassVar[str] = "flatten-buffer"

    def transform(self, gv: GlobalVar, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        return func.with_body(_Flattener().visit(func.body))


class _Flattener(MemoMutator):
    """NOTE: memoized per node (`MemoMutator`): an access shared in several places of an
    inlined body is flattened, and its index simplified, once."""

    def __init__(self) -> None:
        super().__init__()
        self.flat: dict[Buffer, Buffer] = {}

    def flatten(self, buf: Buffer) -> Buffer:
        hit = self.flat.get(buf)
        if hit is not None:
            return hit
        if buf.axis_separators:
            raise PassError(
                "flatten-buffer", f"buffer {buf.name!r} has axis_separators, unsupported"
            )
        if is_flat(buf):
            self.flat[buf] = buf
            return buf
        dt = flat_index_dtype(buf)
        size: PrimExpr = IntImm(dt, 1)
        for dim in buf.shape:
            size = size * _as(dim, dt)
        flat = replace(
            buf, shape=(simplify(size),), strides=(), elem_offset=None, axis_separators=()
        )
        self.flat[buf] = flat
        return flat

    def flat_index(self, buf: Buffer, indices: tuple[PrimExpr, ...]) -> PrimExpr:
        dt = flat_index_dtype(buf)
        if any(i.dtype.bits == 64 for i in indices):
            dt = INT64
        if not buf.strides and buf.elem_offset is None and _horner_ok(buf, indices):
            return _horner(buf, indices, dt)
        strides = [_as(s, dt) for s in buf.strides] or _row_major(buf.shape, dt)
        scalar: PrimExpr = (
            _as(buf.elem_offset, dt) if buf.elem_offset is not None else IntImm(dt, 0)
        )
        vector: list[PrimExpr] = []
        ramp: Ramp | None = None
        for k, (i, stride) in enumerate(zip(indices, strides)):
            if isinstance(i, Ramp) and k == len(indices) - 1:
                ramp = i
                scalar = scalar + _as(i.base, dt) * stride
            elif i.dtype.lanes == 1:
                scalar = scalar + _as(i, dt) * stride
            else:
                vector.append(_times(_as(i, dt), stride))
        index = simplify(scalar)
        if ramp is not None:
            index = Ramp(index, simplify(_as(ramp.stride, dt) * strides[-1]), ramp.lanes)
        for v in vector:  # NOTE: a gather index (not a ramp) is added lane-wise, unsimplified
            lanes = max(index.dtype.lanes, v.dtype.lanes)
            index = Add(_lanes(index, lanes), _lanes(v, lanes))
        return index

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        indices = tuple(self.visit(i) for i in e.indices)
        flat = self.flatten(e.buffer)
        if flat is e.buffer and all(a is b for a, b in zip(indices, e.indices)):
            return e
        index = indices[0] if flat is e.buffer else self.flat_index(e.buffer, indices)
        return BufferLoad(flat, (index,), e.dtype, e.span)

    def visit_BufferStore(self, s: BufferStore) -> BufferStore:
        value = self.visit(s.value)
        indices = tuple(self.visit(i) for i in s.indices)
        flat = self.flatten(s.buffer)
        same = all(a is b for a, b in zip(indices, s.indices))
        if flat is s.buffer and same and value is s.value:
            return s
        index = indices[0] if flat is s.buffer else self.flat_index(s.buffer, indices)
        return BufferStore(flat, value, (index,), s.span)

    def visit_DeclBuffer(self, s: DeclBuffer) -> DeclBuffer:
        flat = self.flatten(s.buffer)
        body = self.visit(s.body)
        if flat is s.buffer and body is s.body:
            return s
        return DeclBuffer(flat, body, s.span)


def _horner_ok(buf: Buffer, indices: tuple[PrimExpr, ...]) -> bool:
    """A row-major buffer with a symbolic dim, read at scalar indices (a ramp only last)."""
    if all(isinstance(d, IntImm) for d in buf.shape):
        return False
    return all(
        i.dtype.lanes == 1 or (isinstance(i, Ramp) and k == len(indices) - 1)
        for k, i in enumerate(indices)
    )


def _horner(buf: Buffer, indices: tuple[PrimExpr, ...], dt: DataType) -> PrimExpr:
    """``((i0*d1 + i1)*d2 + i2)...``: the flat index of a row-major buffer nested by dim, so
    that an index split by the dims of a fused loop merges back (``(f // seq)*seq + f % seq``
    is ``f``; the strides' form ``(f // seq)*(seq*32) + (f % seq)*32`` hides the pair)."""
    last = indices[-1]
    ramp = last if isinstance(last, Ramp) else None
    acc: PrimExpr = IntImm(dt, 0)
    for k, (i, dim) in enumerate(zip(indices, buf.shape)):
        value = _as(ramp.base if ramp is not None and k == len(indices) - 1 else i, dt)
        acc = value if k == 0 else acc * _as(dim, dt) + value
    index = simplify(acc)
    return index if ramp is None else Ramp(index, _as(ramp.stride, dt), ramp.lanes)


def _row_major(shape: tuple[PrimExpr, ...], dt: DataType) -> list[PrimExpr]:
    strides: list[PrimExpr] = []
    acc: PrimExpr = IntImm(dt, 1)
    for dim in reversed(shape):
        strides.append(simplify(acc))
        acc = acc * _as(dim, dt)
    return strides[::-1]


def _as(e: PrimExpr, dt: DataType) -> PrimExpr:
    """``e`` with element type ``dt`` (constants re-typed, others cast; lanes kept)."""
    if e.dtype.element_of() == dt:
        return e
    if isinstance(e, IntImm):
        return IntImm(dt, e.value)
    if isinstance(e, Ramp):
        return Ramp(_as(e.base, dt), _as(e.stride, dt), e.lanes)
    return Cast(dt.with_lanes(e.dtype.lanes), e)


def _lanes(e: PrimExpr, lanes: int) -> PrimExpr:
    return e if e.dtype.lanes == lanes else Broadcast(e, lanes)


def _times(v: PrimExpr, stride: PrimExpr) -> PrimExpr:
    return Mul(v, _lanes(stride, v.dtype.lanes))
