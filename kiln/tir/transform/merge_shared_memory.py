"""MergeSharedMemoryAllocations: one shared-memory buffer per kernel region, reused by liveness.

Precondition: a well-formed module after `FlattenBuffer` (shared buffers are accessed 1-D).
Postcondition, for every *kernel region* (an outermost thread scope, see
`annotate_device_regions`; sibling regions of one function are handled independently) holding two
or more ``shared.dyn`` allocations (``shared`` ones too with ``merge_static_smem=True``; the two
scopes are merged separately):

- those allocations are gone, and the region's body starts with one ``uint8`` allocation
  ``buf_dyn_shmem`` (``buf_shmem`` for ``shared``) declared as a buffer, marked
  ``tir.volatile`` when any merged allocation was;
- each merged buffer lives at a byte offset of it: accesses keep the buffer's dtype and shape but
  use the merged data pointer, with the offset (in elements) added to the index; their
  `DeclBuffer` is dropped; ``tvm_access_ptr`` offsets move the same way, and any other use of the
  old pointer becomes ``address_of`` the element at the offset;
- offsets honour each buffer's alignment (its element size and declared ``data_alignment``);
- two buffers share bytes only when it is race-free: the last statement touching one comes
  strictly before the first statement touching the other, and an unconditional
  ``tvm_storage_sync("shared")`` lies between the two (NOTE: TVM 0.27 reuses without the barrier,
  so a slow thread may still read the old buffer while a fast one writes the new). A buffer
  touched in a sequential loop is live for the whole outermost such loop. Buffers of symbolic
  size are placed after the others, never sharing.

Regions with at most one such allocation, and allocations outside kernel regions, are unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from kiln.arith import simplify
from kiln.errors import PassError
from kiln.ir.dtype import bool_, int32
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.op import Op
from kiln.ir.transform import PassContext
from kiln.ir.visitor import Mutator, Visitor
from kiln.tir.analysis.device import allocation_bytes, is_device_region, is_sync, thread_tag
from kiln.tir.analysis.vars import defined_vars, free_vars
from kiln.tir.attrs import VOLATILE
from kiln.tir.buffer import Buffer, decl_buffer
from kiln.tir.expr import (
    BufferLoad,
    Call,
    FloorDiv,
    IntImm,
    PrimExpr,
    Ramp,
    Var,
    convert,
    is_const_int,
)
from kiln.tir.function import PrimFunc, PrimFuncPass
from kiln.tir.stmt import (
    Allocate,
    AttrStmt,
    BufferStore,
    DeclBuffer,
    For,
    IfThenElse,
    Stmt,
    While,
)
from kiln.tir.type import PointerType

MERGED_NAMES = {"shared.dyn": "buf_dyn_shmem", "shared": "buf_shmem"}


@dataclass(frozen=True)
class MergeSharedMemoryAllocations(PrimFuncPass):
    """Merge each kernel region's shared allocations into one buffer (see module docstring)."""

    merge_static_smem: bool = False
    name: ClassVar[str] = "merge-shared-memory-allocations"

    def transform(self, gv: GlobalVar, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        scopes = ("shared.dyn", "shared") if self.merge_static_smem else ("shared.dyn",)
        return func.with_body(_Regions(scopes).visit(func.body))


class _Regions(Mutator):
    def __init__(self, scopes: tuple[str, ...]) -> None:
        super().__init__()
        self.scopes = scopes

    def visit(self, n: Any) -> Any:
        if not isinstance(n, Stmt):
            return n  # expressions hold no statements
        if is_device_region(n):
            for scope in self.scopes:
                n = _merge(n, scope)
            return n
        return super().visit(n)


def _merge(root: Any, scope: str) -> Any:
    """``root`` (a kernel region) with its ``scope`` allocations merged, when there are two+."""
    allocs = _Allocs(scope, defined_vars(root))
    allocs.visit(root.body)
    if len(allocs.found) <= 1:
        return root
    live = _Liveness({a.buffer_var for a in allocs.found})
    live.visit(root.body)
    offsets, total = _plan(allocs.found, live)
    merged = decl_buffer((total,), "uint8", MERGED_NAMES[scope], scope=scope)
    body = _Rewrite(offsets, merged.data).visit(root.body)
    volatile = any(a.annotations.get(VOLATILE) for a in allocs.found)
    alloc = Allocate(
        merged.data,
        merged.dtype,
        (total,),
        IntImm(bool_, 1),
        DeclBuffer(merged, body),
        {VOLATILE: True} if volatile else {},
    )
    return replace(root, body=alloc)


def _scope_of(var: Var) -> str:
    ty = var.type_annotation
    return ty.storage_scope if isinstance(ty, PointerType) else ""


class _Allocs(Visitor):
    """The region's allocations of one scope whose size is known where the region starts."""

    def __init__(self, scope: str, inner: set[Var]) -> None:
        super().__init__()
        self.scope = scope
        self.inner = inner
        self.found: list[Allocate] = []

    def visit_Allocate(self, s: Allocate) -> None:
        if _scope_of(s.buffer_var) == self.scope:
            if not any(v in self.inner for e in s.extents for v in free_vars(e)):
                self.found.append(s)
        self.generic_visit(s)


class _Liveness(Visitor):
    """Linear positions of statements, each buffer's touches, and unconditional barriers."""

    def __init__(self, vars_: set[Var]) -> None:
        super().__init__()
        self.pos = -1
        self.loops: list[int] = []  # start positions of the open sequential loops
        self.loop_end: dict[int, int] = {}
        self.cond = 0
        self.touches: dict[Var, list[tuple[int, int | None]]] = {v: [] for v in vars_}
        self.barriers: list[int] = []

    def visit(self, n: Any) -> None:
        if not isinstance(n, Stmt):
            super().visit(n)
            return
        self.pos += 1
        start = self.pos
        if _is_barrier(n) and self.cond == 0:
            self.barriers.append(start)
        loop = isinstance(n, While) or (isinstance(n, For) and thread_tag(n) is None)
        control = loop or isinstance(n, IfThenElse)
        self.loops += [start] if loop else []
        self.cond += control
        super().visit(n)
        self.cond -= control
        if loop:
            self.loops.pop()
            self.loop_end[start] = self.pos

    def visit_Var(self, v: Var) -> None:
        if v in self.touches:
            self.touches[v].append((self.pos, self.loops[0] if self.loops else None))

    def visit_Allocate(self, s: Allocate) -> None:
        for e in (*s.extents, s.condition, s.body):  # the pointer it defines is no touch
            self.visit(e)

    def visit_DeclBuffer(self, s: DeclBuffer) -> None:
        self.visit(s.body)

    def interval(self, var: Var) -> tuple[int, int]:
        """First and last position at which ``var`` is live (loops extend it to their span)."""
        spans = [(p, p) if lp is None else (lp, self.loop_end[lp]) for p, lp in self.touches[var]]
        if not spans:
            return -1, -1  # never touched: live only before the first statement
        return min(lo for lo, _ in spans), max(hi for _, hi in spans)

    def may_share(self, a: tuple[int, int], b: tuple[int, int]) -> bool:
        """True when buffers live over ``a`` and ``b`` may occupy the same bytes (see docs)."""
        (first, second) = (a, b) if a[1] < b[0] else (b, a)
        if first[1] >= second[0]:
            return False
        return any(first[1] < p < second[0] for p in self.barriers)


def _is_barrier(s: Stmt) -> bool:
    return is_sync(s, "shared") or is_sync(s, "shared.dyn")


def _align(a: Allocate) -> int:
    """Alignment in bytes: the element size, and the declared buffer's data_alignment."""
    elem = a.dtype.itemsize
    body = a.body
    if isinstance(body, DeclBuffer) and body.buffer.data is a.buffer_var:
        return math.lcm(elem, max(1, body.buffer.data_alignment))
    return elem


def _plan(allocs: list[Allocate], live: _Liveness) -> tuple[dict[Var, Any], PrimExpr]:
    """Byte offset of each buffer (int, or expression) and the merged size (see module docs)."""
    spans = {a.buffer_var: live.interval(a.buffer_var) for a in allocs}
    sized = [a for a in allocs if isinstance(allocation_bytes(a), IntImm)]
    sized.sort(key=lambda a: spans[a.buffer_var][0])
    offsets: dict[Var, Any] = {}
    placed: list[tuple[Var, int, int]] = []
    for a in sized:
        span = spans[a.buffer_var]
        size, align = allocation_bytes(a).value, _align(a)  # type: ignore[attr-defined]
        clashes = [(o, o + n) for v, o, n in placed if not live.may_share(spans[v], span)]
        starts = sorted({0, *(_round_up(end, align) for _, end in clashes)})
        off = next(s for s in starts if all(s + size <= lo or s >= hi for lo, hi in clashes))
        placed.append((a.buffer_var, off, size))
        offsets[a.buffer_var] = off
    total: Any = max((o + n for _, o, n in placed), default=0)
    for a in allocs:  # NOTE: symbolic sizes: appended in program order, never shared
        if a.buffer_var not in offsets:
            offsets[a.buffer_var] = start = _round_up(total, _align(a))
            total = _add(start, allocation_bytes(a))
    return offsets, convert(total, int32)


def _round_up(x: Any, align: int) -> Any:
    """``x`` (an int or an expression) rounded up to a multiple of ``align``."""
    if isinstance(x, int):
        return -(-x // align) * align
    return simplify(FloorDiv(x + (align - 1), IntImm(x.dtype, align)) * align)


def _add(a: Any, b: PrimExpr) -> PrimExpr:
    """``a + b`` in the wider of their dtypes, simplified."""
    a = convert(a, b.dtype)
    wide = a.dtype if a.dtype.bits >= b.dtype.bits else b.dtype
    return simplify(a.astype(wide) + b.astype(wide))


class _Rewrite(Mutator):
    """Point every use of a merged buffer at its offset in the merged allocation."""

    def __init__(self, offsets: dict[Var, Any], merged: Var) -> None:
        super().__init__()
        self.offsets = offsets
        self.merged = merged
        self.buffers: dict[Buffer, Buffer] = {}

    def element_offset(self, var: Var, elem_bytes: int, dtype: Any) -> PrimExpr:
        off = self.offsets[var]
        if isinstance(off, int):
            if off % elem_bytes:
                raise PassError(
                    "merge-shared-memory-allocations",
                    f"{var.name!r} is placed at byte {off}, not a "
                    f"multiple of the {elem_bytes}-byte elements it is accessed as",
                )
            return IntImm(dtype, off // elem_bytes)
        return FloorDiv(off, IntImm(off.dtype, elem_bytes)).astype(dtype)

    def index(self, buf: Buffer, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        if len(indices) != 1:
            raise PassError(
                "merge-shared-memory-allocations",
                f"buffer {buf.name!r} is accessed with "
                f"{len(indices)} indices; run FlattenBuffer first",
            )
        (i,) = indices
        base = i.base if isinstance(i, Ramp) else i
        off = self.element_offset(buf.data, buf.dtype.itemsize, base.dtype)
        if isinstance(i, Ramp):
            return (Ramp(_add_index(i.base, off), i.stride, i.lanes),)
        return (_add_index(i, off),)

    def visit_Buffer(self, b: Buffer) -> Buffer:
        if b.data not in self.offsets:
            return b
        hit = self.buffers.get(b)
        if hit is None:
            hit = self.buffers[b] = replace(b, data=self.merged)
        return hit

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        if e.buffer.data not in self.offsets:
            return self.generic_visit(e)
        indices = self.index(e.buffer, tuple(self.visit(i) for i in e.indices))
        return BufferLoad(self.visit_Buffer(e.buffer), indices, e.dtype, e.span)

    def visit_BufferStore(self, s: BufferStore) -> Stmt:
        if s.buffer.data not in self.offsets:
            return self.generic_visit(s)
        indices = self.index(s.buffer, tuple(self.visit(i) for i in s.indices))
        return BufferStore(self.visit_Buffer(s.buffer), self.visit(s.value), indices, s.span)

    def visit_Allocate(self, s: Allocate) -> Stmt:
        return self.visit(s.body) if s.buffer_var in self.offsets else self.generic_visit(s)

    def visit_DeclBuffer(self, s: DeclBuffer) -> Stmt:
        return self.visit(s.body) if s.buffer.data in self.offsets else self.generic_visit(s)

    def visit_AttrStmt(self, s: AttrStmt) -> Stmt:
        if isinstance(s.node, Var) and s.node in self.offsets:  # an attribute of the buffer
            return replace(s, node=self.merged, value=self.visit(s.value), body=self.visit(s.body))
        return self.generic_visit(s)

    def visit_Call(self, e: Call) -> PrimExpr:
        args = e.args
        if isinstance(e.op, Op) and e.op.name == "tir.tvm_access_ptr" and args[1] in self.offsets:
            ann, data, offset = args[0], args[1], self.visit(args[2])
            off = self.element_offset(data, ann.dtype.itemsize, offset.dtype)
            rest = tuple(self.visit(a) for a in args[3:])
            return replace(e, args=(ann, self.merged, _add_index(offset, off), *rest))
        return self.generic_visit(e)

    def visit_Var(self, v: Var) -> PrimExpr:
        if v not in self.offsets:
            return v
        dtype = _pointee(v)
        view = Buffer(self.merged, dtype, (IntImm(int32, 1),), name=v.name)
        index = self.element_offset(v, dtype.itemsize, int32)
        return Call("handle", Op.get("tir.address_of"), (BufferLoad(view, (index,)),))


def _add_index(index: PrimExpr, off: PrimExpr) -> PrimExpr:
    """``index + off``, simplified (nothing added for an offset of 0)."""
    return index if is_const_int(off, 0) else simplify(index + off)


def _pointee(v: Var) -> Any:
    ty = v.type_annotation
    return ty.element_type.dtype  # type: ignore[union-attr]
