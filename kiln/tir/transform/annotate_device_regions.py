"""AnnotateDeviceRegions: mark each kernel region of a host function with its device target.

A *device region* is an outermost thread scope: an ``AttrStmt(iv, "thread_extent", n, ...)``
(``T.launch_thread`` / ``T.attr(tx, "thread_extent", n)``) or a ``For`` of kind
``THREAD_BINDING`` (``T.thread_binding``) that is not nested in another thread scope. Everything
below it runs on the device; everything around it runs on the host.

Precondition: a well-formed module whose PrimFuncs carry ``"target"`` attributes (`BindTarget`).
Postcondition: in every PrimFunc whose target is a device kind with a host attached
(``cuda -host=c``), each device region ``R`` becomes ``AttrStmt(device, "target", 0, R)`` where
``device`` is the function's target without its host. Functions on a host kind, device functions
(no host attached) and regions already wrapped are left unchanged; running the pass twice is the
same as running it once. `SplitHostDevice` turns each wrapped region into a kernel.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from kiln.ir.dtype import int32
from kiln.ir.module import IRModule
from kiln.ir.transform import Pass, PassContext
from kiln.tir.expr import IntImm
from kiln.tir.function import PrimFunc
from kiln.tir.functor import Mutator, Visitor
from kiln.tir.stmt import AttrStmt, For, ForKind, Stmt

if TYPE_CHECKING:
    from kiln.target.target import Target

TARGET_ATTR = "target"
"""Key of the AttrStmt that marks a device region (its node is the device `Target`)."""


def as_target(value: Any) -> Target:
    """A `Target` from a Target, a string such as ``"cuda -host=c"``, or a dict."""
    # NOTE: imported here: kiln.target sits above kiln.tir in the layer table (it imports the
    # code generators, which import tir). Target itself depends on nothing but kiln.errors.
    from kiln.target.target import Target

    return Target.from_any(value)


def func_target(func: PrimFunc) -> Target | None:
    """The function's ``"target"`` attribute as a `Target`, or None when it has none."""
    value = func.get_attr("target")
    return None if value is None else as_target(value)


def thread_tag(s: Any) -> str | None:
    """The thread tag a statement binds (``"threadIdx.x"``), or None when it binds none."""
    if isinstance(s, AttrStmt) and s.attr_key == "thread_extent":
        return getattr(s.node, "thread_tag", None) or None
    if isinstance(s, For) and s.kind == ForKind.THREAD_BINDING and s.thread_binding is not None:
        tag = s.thread_binding.thread_tag
        return None if tag.startswith("vthread") else tag
    return None


def is_device_region(s: Any) -> bool:
    """True when ``s`` starts a thread scope (see module docstring)."""
    return thread_tag(s) is not None


def is_region_marker(s: Any) -> bool:
    """True for the ``AttrStmt(target, "target", 0, ...)`` this pass wraps regions in."""
    return isinstance(s, AttrStmt) and s.attr_key == TARGET_ATTR


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


class AnnotateDeviceRegions(Pass):
    """Wrap each outermost thread scope of a host function in a device-target marker."""

    name: ClassVar[str] = "annotate-device-regions"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        out = mod
        for gv, func in mod.items():
            if not isinstance(func, PrimFunc):
                continue
            target = func_target(func)
            if target is None or target.host is None or target.is_host_kind:
                continue
            body = _Annotator(target.without_host()).visit(func.body)
            if body is not func.body:
                out = out.update(gv, replace(func, body=body))
        return out


class _Annotator(Mutator):
    def __init__(self, device: Target) -> None:
        super().__init__()
        self.device = device

    def visit(self, n: Any) -> Any:
        if is_region_marker(n):
            return n
        if is_device_region(n):
            return AttrStmt(self.device, TARGET_ATTR, IntImm(int32, 0), n)
        if not isinstance(n, Stmt):
            return n  # expressions hold no statements
        return super().visit(n)
