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

from dataclasses import dataclass
from typing import Any, ClassVar

from kiln.ir.dtype import int32
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.target import Target
from kiln.ir.transform import PassContext
from kiln.ir.visitor import Mutator
from kiln.tir import attrs
from kiln.tir.analysis.device import func_target, is_device_region, is_region_marker
from kiln.tir.expr import IntImm
from kiln.tir.function import PrimFunc, PrimFuncPass
from kiln.tir.stmt import AttrStmt, Stmt


@dataclass(frozen=True)
class AnnotateDeviceRegions(PrimFuncPass):
    """Wrap each outermost thread scope of a host function in a device-target marker."""

    name: ClassVar[str] = "annotate-device-regions"

    def transform(self, gv: GlobalVar, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        target = func_target(func)
        if target is None or target.host is None or target.is_host_kind:
            return func
        return func.with_body(_Annotator(target.without_host()).visit(func.body))


class _Annotator(Mutator):
    def __init__(self, device: Target) -> None:
        super().__init__()
        self.device = device

    def visit(self, n: Any) -> Any:
        if is_region_marker(n):
            return n
        if is_device_region(n):
            return AttrStmt(self.device, attrs.DEVICE_REGION, IntImm(int32, 0), n)
        if not isinstance(n, Stmt):
            return n  # expressions hold no statements
        return super().visit(n)
