"""Scoping constructs of the T namespace: what ``T.launch_thread``, ``T.alloc_buffer``... return.

A `Frame` wraps statements: either those inside ``with frame [as x]:`` or, when it is assigned
(``x = T.launch_thread(...)``) or used as a statement, the rest of the enclosing block. The parser
calls `Frame.enter` (which makes the bound value, named after the assignment target) and then
`Frame.exit` with the parsed body. Frames and specs are inert data: they build IR only when the
parser asks, so they can report mistakes at the user's source location.

IR shapes (the printer prints exactly these back):

- ``T.launch_thread("threadIdx.x", n)`` → ``AttrStmt(IterVar(Range(0, n), v, THREAD_INDEX, tag),
  "thread_extent", n, body)`` (``"virtual_thread"`` for ``vthread*`` tags).
- ``v = T.env_thread(tag)`` → an ``IterVar(None, v, THREAD_INDEX, tag)`` that ``T.attr(v, ...)``
  attaches to and ``T.launch_thread(v, n)`` takes the tag from.
- ``T.alloc_buffer(...)`` and ``T.decl_buffer(...)`` without ``data=`` → ``Allocate`` of the
  buffer's data pointer around ``DeclBuffer``; ``T.decl_buffer(..., data=p)`` → ``DeclBuffer``.
- ``T.allocate(extents, dtype, scope)`` → ``Allocate`` (the bound value is the pointer variable).
- ``x: T.int32 = v``, ``x = expr``, ``T.LetStmt(v, var=x)`` → ``LetStmt``; ``assert c, "m"`` and
  ``T.Assert(c, "m")`` → ``AssertStmt``.
- A thread-bound loop ``T.thread_binding(n, "threadIdx.x")`` is ``For(v, 0, n, THREAD_BINDING,
  thread_binding=IterVar(None, v, THREAD_INDEX, tag))``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Protocol

from kiln.errors import IRError, IRValueError
from kiln.ir.node import as_attrs
from kiln.ir.span import Span
from kiln.ir.structural import structural_equal
from kiln.script.tir_ns.types import BufferSpec, DTypeCtor, VarSpec, as_dtype, as_scope
from kiln.tir.buffer import Buffer, check_extents
from kiln.tir.expr import BOOL, Add, IntImm, PrimExpr, StringImm, Sub, Var, convert
from kiln.tir.stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    DeclBuffer,
    Evaluate,
    ForKind,
    IterKind,
    IterVar,
    LetStmt,
    Range,
    Stmt,
)
from kiln.tir.type import PointerType, PrimType


class FrameContext(Protocol):
    """What frames need from the parser."""

    def env_thread(self, var: Var) -> IterVar | None:
        """The IterVar that ``T.env_thread`` made for ``var``, if any."""


class Frame(ABC):
    """Base of scoping constructs; see the module docstring."""

    def enter(self, ctx: FrameContext, name: str | None, span: Span | None) -> Any:
        """Make what ``as x`` / ``x =`` binds (a variable, a buffer, or None)."""
        return None

    @abstractmethod
    def exit(self, body: Stmt, span: Span | None) -> Stmt:
        """Wrap ``body`` in the statement this frame stands for."""


def thread_attr_key(tag: str) -> str:
    """The AttrStmt key that launches a thread of ``tag``."""
    return "virtual_thread" if tag.startswith("vthread") else "thread_extent"


class LetFrame(Frame):
    """``T.LetStmt(value, type_annotation=None, *, var=None)``: bind a variable over a body."""

    def __init__(self, value: Any, type_annotation: Any = None, *, var: Any = None) -> None:
        self.value, self.type_annotation, self.var = value, type_annotation, var

    def enter(self, ctx: FrameContext, name: str | None, span: Span | None) -> Var:
        var = self.var
        if isinstance(var, VarSpec):
            var = var.make(name or "v", span)
        elif var is None:
            ann = self.type_annotation
            if isinstance(ann, DTypeCtor):
                ann = ann.spec()
            elif ann is not None and not isinstance(ann, VarSpec):
                ann = VarSpec(as_dtype(ann))
            if ann is None:
                value = convert(self.value)
                ann = VarSpec(value.dtype, pointee=None)
            var = ann.make(name or "v", span)
        if not isinstance(var, Var):
            raise IRError(f"T.LetStmt: var= must be a variable such as T.int32(), got {var!r}")
        self.var = var
        self.value = convert(self.value, var.dtype)
        return var

    def exit(self, body: Stmt, span: Span | None) -> Stmt:
        return LetStmt(self.var, self.value, body, span)


class AttrFrame(Frame):
    """``T.attr(node, key, value)``: attach an attribute to ``node`` over a body."""

    def __init__(self, node: Any, attr_key: str, value: Any) -> None:
        self.node, self.attr_key, self.value = node, attr_key, value

    def enter(self, ctx: FrameContext, name: str | None, span: Span | None) -> Any:
        if not isinstance(self.attr_key, str):
            raise IRError(f"T.attr: the key must be a string, got {self.attr_key!r}")
        if isinstance(self.node, Var):
            self.node = ctx.env_thread(self.node) or self.node
        return self.node

    def exit(self, body: Stmt, span: Span | None) -> Stmt:
        return AttrStmt(self.node, self.attr_key, convert(self.value), body, span)


class LaunchThreadFrame(Frame):
    """``T.launch_thread("threadIdx.x", n)`` or ``T.launch_thread(env_var, n)``."""

    def __init__(self, thread: Any, extent: Any) -> None:
        self.thread, self.extent = thread, extent
        self.iter_var: IterVar | None = None

    def enter(self, ctx: FrameContext, name: str | None, span: Span | None) -> Var:
        extent = convert(self.extent)
        if not extent.dtype.is_integer:
            raise IRError(f"T.launch_thread: the extent must be an integer, got {extent!r}")
        if isinstance(self.thread, str):
            tag = self.thread
            var = Var(name or tag.replace(".", "_"), extent.dtype, span=span)
        elif isinstance(self.thread, Var) and ctx.env_thread(self.thread) is not None:
            var = self.thread
            tag = ctx.env_thread(var).thread_tag  # type: ignore[union-attr]
        else:
            raise IRError(
                'T.launch_thread: the thread must be a tag such as "threadIdx.x" or a '
                f"variable made by T.env_thread, got {self.thread!r}"
            )
        dom = Range(IntImm(extent.dtype, 0), extent, span)
        self.iter_var = IterVar(dom, var, IterKind.THREAD_INDEX, tag, span)
        self.extent = extent
        return var

    def exit(self, body: Stmt, span: Span | None) -> Stmt:
        iv = self.iter_var
        assert iv is not None
        return AttrStmt(iv, thread_attr_key(iv.thread_tag), self.extent, body, span)


@dataclass(frozen=True)
class EnvThreadSpec:
    """``T.env_thread(tag)``: a thread index variable for ``T.attr`` / ``T.launch_thread``."""

    thread_tag: str
    dtype: Any = "int32"

    def make(self, name: str, span: Span | None) -> IterVar:
        if not isinstance(self.thread_tag, str):
            raise IRError(f"T.env_thread: the tag must be a string, got {self.thread_tag!r}")
        var = Var(name, as_dtype(self.dtype), span=span)
        return IterVar(None, var, IterKind.THREAD_INDEX, self.thread_tag, span)


class AllocateFrame(Frame):
    """``T.allocate(extents, dtype, scope="global", condition=None, annotations=None)``."""

    def __init__(
        self,
        extents: Any,
        dtype: Any,
        scope: Any = "global",
        condition: Any = None,
        annotations: Any = None,
    ) -> None:
        self.extents, self.dtype, self.scope = extents, dtype, scope
        self.condition, self.annotations = condition, annotations
        self.var: Var | None = None

    def enter(self, ctx: FrameContext, name: str | None, span: Span | None) -> Var:
        self.dtype = as_dtype(self.dtype)
        if self.dtype.is_void:
            raise IRValueError("T.allocate: elements of dtype void cannot be allocated")
        ptr = PointerType(PrimType(self.dtype), as_scope(self.scope))
        self.var = Var(name or "buf", ptr, span=span)
        ext = self.extents
        self.extents = check_extents(
            "T.allocate", tuple(ext) if isinstance(ext, (tuple, list)) else (ext,)
        )
        return self.var

    def exit(self, body: Stmt, span: Span | None) -> Stmt:
        cond = IntImm(BOOL, 1) if self.condition is None else convert(self.condition)
        assert self.var is not None
        annotations = as_attrs(self.annotations)
        return Allocate(self.var, self.dtype, self.extents, cond, body, annotations, span)


class BufferFrame(Frame):
    """``T.decl_buffer`` / ``T.alloc_buffer``: declare (and maybe allocate) a buffer."""

    def __init__(self, spec: BufferSpec, allocate: bool | None) -> None:
        self.spec, self.allocate = spec, allocate
        self.buffer: Buffer | None = None

    def enter(self, ctx: FrameContext, name: str | None, span: Span | None) -> Buffer:
        if self.allocate is None:
            self.allocate = not self.spec.has_data()
        elif self.spec.has_data():
            raise IRError(f"{self.spec.what}: data= is not allowed; use T.decl_buffer")
        self.buffer = self.spec.build(name or "buffer", span)
        return self.buffer

    def exit(self, body: Stmt, span: Span | None) -> Stmt:
        buf = self.buffer
        assert buf is not None
        stmt: Stmt = DeclBuffer(buf, body, span)
        if self.allocate:
            stmt = Allocate(buf.data, buf.dtype, buf.shape, IntImm(BOOL, 1), stmt, span=span)
        return stmt


class AssertFrame(Frame):
    """``T.Assert(condition, message)`` (also ``assert cond, "message"``)."""

    def __init__(self, condition: Any, message: Any = "") -> None:
        self.condition, self.message = condition, message

    def exit(self, body: Stmt, span: Span | None) -> Stmt:
        msg = StringImm(self.message) if isinstance(self.message, str) else self.message
        return AssertStmt(convert(self.condition), msg, body, span)


@dataclass(frozen=True)
class FuncAttrs:
    """``T.func_attr({...})``: attributes of the enclosing function."""

    attrs: dict


@dataclass(frozen=True)
class MatchBufferSpec:
    """``B = T.match_buffer(param, shape, ...)``: a buffer bound to a handle parameter."""

    param: Any
    spec: BufferSpec


@dataclass(frozen=True)
class LoopSpec:
    """``range`` / ``T.serial`` / ``T.parallel`` / ... / ``T.thread_binding``: one loop."""

    kind: ForKind
    start: Any
    stop: Any = None
    thread: str | None = None
    annotations: Any = None


@dataclass(frozen=True)
class GridSpec:
    """``T.grid(*extents)``: perfectly nested serial loops from 0."""

    extents: tuple = field(default_factory=tuple)


def loop_bounds(start: Any, stop: Any) -> tuple[PrimExpr, PrimExpr]:
    """(min, extent) of ``range(start, stop)``; ``stop=None`` means ``range(start)``.

    NOTE: an extent written ``start + e`` is read back as exactly ``e`` (no simplifier needed),
    which is how the printer writes loops that do not start at 0.
    """
    if stop is None:
        start, stop = 0, start
    for v in (start, stop):
        integer = isinstance(v, int) or (isinstance(v, PrimExpr) and v.dtype.is_integer)
        if not integer or isinstance(v, bool):
            raise IRError(f"loop bounds must be integers, got {v!r}")
    ref = start if isinstance(start, PrimExpr) else stop
    dt = ref.dtype if isinstance(ref, PrimExpr) else convert(stop).dtype
    lo = convert(start, dt)
    if isinstance(start, int) and isinstance(stop, int):
        return lo, convert(stop - start, dt)
    return lo, extent_between(lo, convert(stop, dt))


def extent_between(lo: PrimExpr, stop: PrimExpr) -> PrimExpr:
    """``stop - lo``, reading ``lo + e`` back as ``e`` and ``stop - 0`` as ``stop``."""
    if isinstance(stop, Add) and structural_equal(stop.a, lo):
        return stop.b
    if isinstance(lo, IntImm) and lo.value == 0:
        return stop
    if isinstance(stop, IntImm) and isinstance(lo, IntImm):
        return IntImm(lo.dtype, stop.value - lo.value)
    return Sub(stop, lo)


def evaluate(value: Any) -> Evaluate:
    """``T.evaluate(expr)``: evaluate an expression for its effect."""
    return Evaluate(convert(value))
