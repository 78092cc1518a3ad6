"""Where code runs: function targets, thread scopes (device regions), kernels, barriers and the
bytes an allocation takes."""

from __future__ import annotations

from typing import Any

from kiln.arith import simplify
from kiln.ir.dtype import int32, int64
from kiln.ir.op import Op
from kiln.ir.target import Target
from kiln.ir.visitor import Visitor
from kiln.tir import attrs
from kiln.tir.expr import Call, IntImm, PrimExpr, StringImm, const_product
from kiln.tir.function import PrimFunc
from kiln.tir.stmt import Allocate, AttrStmt, Evaluate, For, ForKind, Stmt


def as_target(value: Any) -> Target:
    """A `Target` from a Target, a string such as ``"cuda -host=c"``, or a dict."""
    return Target.from_any(value)


def func_target(func: PrimFunc) -> Target | None:
    """The function's ``"target"`` attribute as a `Target`, or None when it has none."""
    value = func.get_attr(attrs.TARGET)
    return None if value is None else as_target(value)


def is_kernel(func: PrimFunc) -> bool:
    """True for a kernel launched from the host (as opposed to a ``__device__`` helper)."""
    return func.get_attr(attrs.CALLING_CONV, attrs.DEVICE_SUBROUTINE) == attrs.KERNEL_LAUNCH


def is_device_function(func: Any) -> bool:
    """True for code that runs on a device: a kernel, or a function bound to a device target
    without a host and without a packed-API entry (a device helper)."""
    if not isinstance(func, PrimFunc):
        return False
    if is_kernel(func):
        return True
    target = func_target(func)
    if target is None or func.get_attr(attrs.PACKED_API) is not None:
        return False
    return not target.kind_info.is_host and target.host is None


def thread_tag(s: Any) -> str | None:
    """The thread tag a statement binds (``"threadIdx.x"``), or None when it binds none."""
    if isinstance(s, AttrStmt) and s.attr_key == attrs.THREAD_EXTENT:
        return getattr(s.node, "thread_tag", None) or None
    if isinstance(s, For) and s.kind == ForKind.THREAD_BINDING and s.thread_binding is not None:
        tag = s.thread_binding.thread_tag
        return None if tag.startswith("vthread") else tag
    return None


def is_device_region(s: Any) -> bool:
    """True when ``s`` starts a thread scope (a device region)."""
    return thread_tag(s) is not None


def is_region_marker(s: Any) -> bool:
    """True for the ``AttrStmt(target, "target", 0, ...)`` that wraps a region to split out."""
    return isinstance(s, AttrStmt) and s.attr_key == attrs.DEVICE_REGION


def has_device_region(stmt: Stmt) -> bool:
    """True when ``stmt`` contains a thread scope anywhere."""
    finder = _FindRegion()
    finder.visit(stmt)
    return finder.found


class _FindRegion(Visitor):
    def __init__(self) -> None:
        super().__init__()
        self.found = False

    def visit(self, n: Any) -> None:
        if self.found or not isinstance(n, Stmt):
            return  # expressions hold no statements
        if is_device_region(n):
            self.found = True
            return
        super().visit(n)


def is_sync(s: Stmt, scope: str) -> bool:
    """True when ``s`` is the barrier ``tvm_storage_sync(scope)``."""
    if not isinstance(s, Evaluate) or not isinstance(s.value, Call):
        return False
    call = s.value
    if not isinstance(call.op, Op) or call.op.name != "tir.tvm_storage_sync" or not call.args:
        return False
    return isinstance(call.args[0], StringImm) and call.args[0].value == scope


def allocation_bytes(s: Allocate) -> PrimExpr:
    """The bytes an allocation occupies: a constant (int32 when it fits, else int64) when its
    extents are constants, else their product in the widest extent dtype."""
    total = const_product(s.extents)
    if total is not None:
        value = total * s.dtype.itemsize
        return IntImm(int32 if value < 2**31 else int64, value)
    size: PrimExpr = IntImm(int32, s.dtype.itemsize)
    for e in s.extents:
        if e.dtype.bits > size.dtype.bits:
            size = size.astype(e.dtype)
        size = size * (e if e.dtype == size.dtype else e.astype(size.dtype))
    return simplify(size)
