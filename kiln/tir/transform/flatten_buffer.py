"""FlattenBuffer: rewrite every N-D buffer access as a 1-D access of the same memory.

Precondition: a well-formed module; buffers have no ``axis_separators``.
Postcondition: every `BufferLoad` / `BufferStore` in a function body indexes a 1-D buffer with no
strides and no element offset, whose data variable is the original buffer's. The flat index is
``elem_offset + sum(index[d] * stride[d])`` with the buffer's declared strides, or row-major
strides computed from its shape. A vector (`Ramp`) index in the last dimension stays a `Ramp`.
`DeclBuffer` statements declare the flat buffer. Parameter buffer maps keep their N-D buffers:
they describe the arguments (MakePackedAPI checks shapes from them).

Index arithmetic is folded where it is constant (``i * 1``, ``0 + j``, ``4 * 8``); the index type
is int64 when any index, dimension or stride is int64, or when a constant size needs it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from kiln.errors import PassError
from kiln.ir.dtype import DataType
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.transform import PassContext
from kiln.ir.visitor import Mutator
from kiln.tir.buffer import Buffer
from kiln.tir.expr import Add, Broadcast, BufferLoad, Cast, IntImm, Mul, PrimExpr, Ramp
from kiln.tir.function import PrimFunc, PrimFuncPass
from kiln.tir.stmt import BufferStore, DeclBuffer

INT32 = DataType("int", 32)
INT64 = DataType("int", 64)


@dataclass(frozen=True)
class FlattenBuffer(PrimFuncPass):
    """Turn N-D buffer accesses into 1-D accesses of the same data pointer (see module doc)."""

    name: ClassVar[str] = "flatten-buffer"

    def transform(self, gv: GlobalVar, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        return func.with_body(_Flattener().visit(func.body))


class _Flattener(Mutator):
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
        offset = buf.elem_offset
        if len(buf.shape) == 1 and not buf.strides and (offset is None or _const(offset) == 0):
            self.flat[buf] = buf
            return buf
        dt = _index_dtype(buf, ())
        size: PrimExpr = IntImm(dt, 1)
        for dim in buf.shape:
            size = _mul(size, _as(dim, dt))
        flat = replace(buf, shape=(size,), strides=(), elem_offset=None, axis_separators=())
        self.flat[buf] = flat
        return flat

    def flat_index(self, buf: Buffer, indices: tuple[PrimExpr, ...]) -> PrimExpr:
        dt = _index_dtype(buf, indices)
        strides = [_as(s, dt) for s in buf.strides] or _row_major(buf.shape, dt)
        index: PrimExpr = _as(buf.elem_offset, dt) if buf.elem_offset is not None else IntImm(dt, 0)
        for i, stride in zip(indices, strides):
            index = _add(index, _mul(_as(i, dt), stride))
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


def _index_dtype(buf: Buffer, indices: tuple[PrimExpr, ...]) -> DataType:
    parts = [*buf.shape, *buf.strides, *indices]
    if buf.elem_offset is not None:
        parts.append(buf.elem_offset)
    if any(p.dtype.bits == 64 for p in parts):
        return INT64
    total = 1
    for dim in buf.shape:
        c = _const(dim)
        total *= c if c is not None else 1
    return INT64 if total >= 2**31 else INT32


def _row_major(shape: tuple[PrimExpr, ...], dt: DataType) -> list[PrimExpr]:
    strides: list[PrimExpr] = []
    acc: PrimExpr = IntImm(dt, 1)
    for dim in reversed(shape):
        strides.append(acc)
        acc = _mul(acc, _as(dim, dt))
    return strides[::-1]


def _const(e: PrimExpr) -> int | None:
    return e.value if isinstance(e, IntImm) and e.dtype.lanes == 1 else None


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


def _add(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    ca, cb = _const(a), _const(b)
    if ca is not None and cb is not None:
        return IntImm(a.dtype, ca + cb)
    if ca == 0:
        return b
    if cb == 0:
        return a
    if isinstance(b, Ramp) and a.dtype.lanes == 1:
        return Ramp(_add(a, b.base), b.stride, b.lanes)
    if isinstance(a, Ramp) and b.dtype.lanes == 1:
        return Ramp(_add(a.base, b), a.stride, a.lanes)
    lanes = max(a.dtype.lanes, b.dtype.lanes)
    return Add(_lanes(a, lanes), _lanes(b, lanes))


def _mul(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    ca, cb = _const(a), _const(b)
    if ca is not None and cb is not None:
        return IntImm(a.dtype, ca * cb)
    if ca == 1:
        return b
    if cb == 1:
        return a
    if isinstance(a, Ramp) and b.dtype.lanes == 1:
        return Ramp(_mul(a.base, b), _mul(a.stride, b), a.lanes)
    lanes = max(a.dtype.lanes, b.dtype.lanes)
    return Mul(_lanes(a, lanes), _lanes(b, lanes))
