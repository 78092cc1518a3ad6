"""TIR statements: bindings, loops, branches, stores, allocation and declaration of buffers."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar

from kiln.errors import IRError
from kiln.ir.dtype import DataType
from kiln.ir.node import EMPTY_ATTRS, Attrs, Node, as_attrs
from kiln.ir.span import Span
from kiln.tir.buffer import Buffer, _exprs
from kiln.tir.expr import Broadcast, PrimExpr, StringImm, Var, _indices, convert
from kiln.tir.type import PointerType, PrimType


class Stmt(Node):
    """Base of TIR statements."""

    __slots__ = ()


def _stmt(value: Any, what: str) -> Stmt:
    if isinstance(value, Stmt):
        return value
    if isinstance(value, PrimExpr):
        return Evaluate(value)
    raise IRError(f"{what}: expected a statement, got {value!r}")


def _set(obj: Any, name: str, value: Any) -> None:
    object.__setattr__(obj, name, value)


@dataclass(frozen=True, slots=True, eq=False)
class Range(Node):
    """The half-open interval ``[min, min + extent)``."""

    min: PrimExpr
    extent: PrimExpr
    span: Span | None = None

    def __post_init__(self) -> None:
        # NOTE: a Python int takes the dtype of the other bound, so Range(0, n_int64) is int64.
        lo, ext = self.min, self.extent
        if not isinstance(lo, PrimExpr) and isinstance(ext, PrimExpr):
            lo = convert(lo, ext.dtype)
        lo = convert(lo)
        ext = convert(ext, lo.dtype)
        if lo.dtype != ext.dtype:
            raise IRError(f"Range: min is {lo.dtype} but extent is {ext.dtype}")
        _set(self, "min", lo)
        _set(self, "extent", ext)

    @staticmethod
    def from_min_extent(lo: Any, extent: Any) -> Range:
        return Range(convert(lo), convert(extent))


class IterKind(Enum):
    """How an iteration variable is executed (only thread indices matter to TIR passes)."""

    DATA_PAR = 0
    THREAD_INDEX = 1
    COMM_REDUCE = 2
    ORDERED = 3
    OPAQUE = 4
    UNROLLED = 5
    VECTORIZED = 6
    PARALLELIZED = 7


@dataclass(frozen=True, slots=True, eq=False)
class IterVar(Node):
    """An iteration variable with a domain, e.g. a thread index bound to ``threadIdx.x``."""

    dom: Range | None
    var: Var
    iter_type: IterKind = IterKind.THREAD_INDEX
    thread_tag: str = ""
    span: Span | None = None
    _def_fields: ClassVar[tuple[str, ...]] = ("var",)

    def __post_init__(self) -> None:
        if not isinstance(self.var, Var):
            raise IRError(f"IterVar: expected a Var, got {self.var!r}")
        if not isinstance(self.thread_tag, str):
            raise IRError(f"IterVar: the thread tag must be a string, got {self.thread_tag!r}")


@dataclass(frozen=True, slots=True, eq=False)
class LetStmt(Stmt):
    """Bind ``var`` to ``value`` for ``body``."""

    var: Var
    value: PrimExpr
    body: Stmt
    span: Span | None = None
    _def_fields: ClassVar[tuple[str, ...]] = ("var",)

    def __post_init__(self) -> None:
        if not isinstance(self.var, Var):
            raise IRError(f"LetStmt: expected a Var to bind, got {self.var!r}")
        _set(self, "value", convert(self.value, self.var.dtype))
        _set(self, "body", _stmt(self.body, "LetStmt body"))


@dataclass(frozen=True, slots=True, eq=False)
class AttrStmt(Stmt):
    """Attach ``attr_key = value`` to ``node`` over ``body`` (``thread_extent`` starts a kernel)."""

    node: Any
    attr_key: str
    value: PrimExpr
    body: Stmt
    span: Span | None = None
    _def_fields: ClassVar[tuple[str, ...]] = ("node",)

    def __post_init__(self) -> None:
        _set(self, "value", convert(self.value))
        _set(self, "body", _stmt(self.body, "AttrStmt body"))


@dataclass(frozen=True, slots=True, eq=False)
class AssertStmt(Stmt):
    """Check ``condition`` at run time, failing with ``message``; then run ``body``."""

    condition: PrimExpr
    message: PrimExpr
    body: Stmt
    span: Span | None = None

    def __post_init__(self) -> None:
        _set(self, "condition", convert(self.condition))
        _set(self, "message", convert(self.message))
        _set(self, "body", _stmt(self.body, "AssertStmt body"))


class ForKind(Enum):
    """How a loop runs: in order, across threads, as SIMD, unrolled, or bound to a GPU thread."""

    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unroll"
    THREAD_BINDING = "thread_binding"


@dataclass(frozen=True, slots=True, eq=False)
class For(Stmt):
    """``for loop_var in [min, min + extent): body``."""

    loop_var: Var
    min: PrimExpr
    extent: PrimExpr
    kind: ForKind
    body: Stmt
    thread_binding: IterVar | None = None
    annotations: Attrs = EMPTY_ATTRS
    span: Span | None = None
    _def_fields: ClassVar[tuple[str, ...]] = ("loop_var",)

    def __post_init__(self) -> None:
        if not isinstance(self.loop_var, Var):
            raise IRError(f"For: loop variable must be a Var, got {self.loop_var!r}")
        _set(self, "min", convert(self.min, self.loop_var.dtype))
        _set(self, "extent", convert(self.extent, self.loop_var.dtype))
        if not isinstance(self.kind, ForKind):
            _set(self, "kind", ForKind(self.kind))
        _set(self, "body", _stmt(self.body, "For body"))
        _set(self, "annotations", as_attrs(self.annotations))


@dataclass(frozen=True, slots=True, eq=False)
class While(Stmt):
    """Run ``body`` while ``condition`` holds."""

    condition: PrimExpr
    body: Stmt
    span: Span | None = None

    def __post_init__(self) -> None:
        _set(self, "condition", convert(self.condition))
        _set(self, "body", _stmt(self.body, "While body"))


@dataclass(frozen=True, slots=True, eq=False)
class IfThenElse(Stmt):
    """``if condition: then_case else: else_case`` (else optional)."""

    condition: PrimExpr
    then_case: Stmt
    else_case: Stmt | None = None
    span: Span | None = None

    def __post_init__(self) -> None:
        if isinstance(self.condition, bool):
            raise IRError(
                f"IfThenElse condition is the Python bool {self.condition}: Python `==` on IR "
                "expressions compares identity; build the test with `a.eq(b)` / `a.ne(b)`"
            )
        _set(self, "condition", convert(self.condition))
        _set(self, "then_case", _stmt(self.then_case, "IfThenElse then"))
        if self.else_case is not None:
            _set(self, "else_case", _stmt(self.else_case, "IfThenElse else"))


@dataclass(frozen=True, slots=True, eq=False)
class SeqStmt(Stmt):
    """Statements run in order (at least two; use `seq` to build one that may flatten)."""

    seq: tuple[Stmt, ...]
    span: Span | None = None

    def __post_init__(self) -> None:
        _set(self, "seq", tuple(_stmt(s, "SeqStmt item") for s in self.seq))


@dataclass(frozen=True, slots=True, eq=False)
class Evaluate(Stmt):
    """Evaluate an expression for its effect (usually a call)."""

    value: PrimExpr
    span: Span | None = None

    def __post_init__(self) -> None:
        _set(self, "value", convert(self.value))


@dataclass(frozen=True, slots=True, eq=False)
class BufferStore(Stmt):
    """``buffer[indices] = value``."""

    buffer: Buffer
    value: PrimExpr
    indices: tuple[PrimExpr, ...]
    span: Span | None = None

    def __post_init__(self) -> None:
        _set(self, "indices", _indices(self.buffer, self.indices, "BufferStore"))
        lanes = self.indices[-1].dtype.lanes if self.indices else 1
        value = self.value
        if not isinstance(value, PrimExpr):  # a Python number fills every lane it stores
            value = convert(value, self.buffer.dtype.element_of())
            lanes *= self.buffer.dtype.lanes
            value = Broadcast(value, lanes) if lanes > 1 else value
        _set(self, "value", value)


@dataclass(frozen=True, slots=True, eq=False)
class Allocate(Stmt):
    """Allocate ``prod(extents)`` elements of ``dtype`` for ``buffer_var`` over ``body``."""

    buffer_var: Var
    dtype: DataType
    extents: tuple[PrimExpr, ...]
    condition: PrimExpr
    body: Stmt
    annotations: Attrs = EMPTY_ATTRS
    span: Span | None = None
    _def_fields: ClassVar[tuple[str, ...]] = ("buffer_var",)

    def __post_init__(self) -> None:
        if not isinstance(self.buffer_var, Var):
            raise IRError(f"Allocate: expected a handle Var, got {self.buffer_var!r}")
        if not isinstance(self.dtype, DataType):
            _set(self, "dtype", DataType.parse(self.dtype))
        _set(self, "extents", _exprs(self.extents, "Allocate extents"))
        _set(self, "condition", convert(self.condition))
        _set(self, "body", _stmt(self.body, "Allocate body"))
        _set(self, "annotations", as_attrs(self.annotations))


@dataclass(frozen=True, slots=True, eq=False)
class DeclBuffer(Stmt):
    """Declare ``buffer`` (a view of memory its data var already points to) for ``body``."""

    buffer: Buffer
    body: Stmt
    span: Span | None = None
    _def_fields: ClassVar[tuple[str, ...]] = ("buffer",)

    def __post_init__(self) -> None:
        if not isinstance(self.buffer, Buffer):
            raise IRError(f"DeclBuffer: expected a Buffer, got {self.buffer!r}")
        _set(self, "body", _stmt(self.body, "DeclBuffer body"))


def seq(*stmts: Stmt | None) -> Stmt:
    """Sequence statements, flattening nested `SeqStmt`s and dropping ``None``; one stays as is."""
    flat: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, SeqStmt):
            flat.extend(s.seq)
        else:
            flat.append(_stmt(s, "seq"))
    if not flat:
        return Evaluate(convert(0))
    return flat[0] if len(flat) == 1 else SeqStmt(tuple(flat))


def assert_stmt(cond: PrimExpr, message: str, body: Stmt) -> AssertStmt:
    return AssertStmt(cond, StringImm(message), body)


def alloc_dtype(var: Var) -> DataType | None:
    """The element type a pointer variable points to, if it has a typed pointer annotation."""
    ty = var.type_annotation
    if isinstance(ty, PointerType) and isinstance(ty.element_type, PrimType):
        return ty.element_type.dtype
    return None
