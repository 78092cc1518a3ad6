"""What is wrong with one TIR node on its own: checks that need no scope or context.

The verifier (`kiln.tir.analysis.verify`) runs them on every node of hand-built or lowered IR; the
script parser runs them on each expression and statement it builds, so a mistake is reported at
the user's line. Each function returns a message naming the node and what was expected, or None.

- an integer division or remainder (``/ // %``, ``truncdiv``...) by the constant zero;
- a shift by a constant that is negative or not less than the operand's bit width;
- a constant index outside a constant dimension (``A[16]`` of a 16-element ``A``, ``A[-1]``),
  a vector index other than the last, a store whose value has other lanes than its index;
- a buffer or allocation of dtype ``void``, with a negative constant or non-integer dimension;
- a function declaring a return type whose body can end without returning.
"""

from __future__ import annotations

from typing import Any

from kiln.ir.op import Op
from kiln.tir.buffer import Buffer
from kiln.tir.expr import (
    BinaryOp,
    Broadcast,
    BufferLoad,
    Call,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Mod,
    PrimExpr,
    Ramp,
    Select,
)
from kiln.tir.stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    BufferStore,
    DeclBuffer,
    Evaluate,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
)
from kiln.tir.type import PointerType, PrimType

DIVISIONS = (Div, Mod, FloorDiv, FloorMod)
_DIV_SYMBOL = {Div: "/", Mod: "%", FloorDiv: "//", FloorMod: "%"}
_SHIFTS = ("tir.shift_left", "tir.shift_right")
SHOWN = 80
"""Longest expression text a message shows (longer ones are cut with ``...``)."""


def short(node: Any) -> str:
    """``node`` as script text, cut to `SHOWN` characters."""
    text = str(node)
    return text if len(text) <= SHOWN else text[: SHOWN - 3] + "..."


def const_lanes(e: Any) -> tuple[int, int] | None:
    """(min, max) over the lanes of a constant integer scalar, `Broadcast` or `Ramp`."""
    if isinstance(e, IntImm):
        return e.value, e.value
    if isinstance(e, Broadcast):
        return const_lanes(e.value)
    if isinstance(e, Ramp) and isinstance(e.base, IntImm) and isinstance(e.stride, IntImm):
        last = e.base.value + e.stride.value * (e.lanes - 1)
        return min(e.base.value, last), max(e.base.value, last)
    return None


def zero_divisor(e: Any) -> bool:
    """True when ``e`` is an integer division or remainder by the constant zero."""
    if not isinstance(e, DIVISIONS) or not e.dtype.element_of().is_integer:
        return False
    return const_lanes(e.b) == (0, 0)


def expr_problem(e: PrimExpr) -> str | None:
    """What is wrong with expression ``e`` itself (its children are checked on their own)."""
    if zero_divisor(e):
        a = e.a  # type: ignore[attr-defined]
        text = f"({short(a)})" if isinstance(a, (BinaryOp, Select)) else short(a)
        return f"division by zero: {text} {_DIV_SYMBOL[type(e)]} 0 (the divisor is the constant 0)"
    if isinstance(e, Call) and isinstance(e.op, Op) and e.op.name in _SHIFTS and len(e.args) == 2:
        return shift_problem(e)
    if isinstance(e, BufferLoad) and isinstance(e.buffer, Buffer):
        return index_problem(e.buffer, e.indices)
    return None


def shift_problem(e: Call) -> str | None:
    """A constant shift amount outside ``[0, bits)`` of the shifted operand."""
    amount = const_lanes(e.args[1])
    bits = e.args[0].dtype.bits
    if amount is None or (amount[0] >= 0 and amount[1] < bits):
        return None
    bad = amount[0] if amount[0] < 0 else amount[1]
    kind = "left" if e.op.name == "tir.shift_left" else "right"  # type: ignore[union-attr]
    return (
        f"shift {kind} of a {e.args[0].dtype} value by {bad}: the amount must be in [0, {bits - 1}]"
    )


def index_problem(buf: Buffer, indices: tuple[PrimExpr, ...]) -> str | None:
    """A constant index outside its constant dimension, or a vector index before the last."""
    for k, (i, dim) in enumerate(zip(indices, buf.shape)):
        if k < len(indices) - 1 and isinstance(i, PrimExpr) and i.dtype.lanes > 1:
            return f"index {k} of buffer {buf.name!r} is a vector; only the last index may be"
        span = const_lanes(i)
        if span is None or not isinstance(dim, IntImm):
            continue
        if span[0] < 0 or span[1] >= dim.value:
            bad = span[0] if span[0] < 0 else span[1]
            where = f"dimension {k} of " if len(buf.shape) > 1 else ""
            return (
                f"index {bad} is out of bounds for {where}buffer {buf.name!r} "
                f"(size {dim.value}: valid indices are 0 to {dim.value - 1})"
            )
    return None


def store_problem(s: BufferStore) -> str | None:
    """A store whose value lanes differ from its index lanes, or with a bad index."""
    if not isinstance(s.buffer, Buffer):
        return None
    lanes = s.indices[-1].dtype.lanes if s.indices else 1
    want = s.buffer.dtype.lanes * lanes
    got = s.value.dtype.lanes
    if got != want:
        return (
            f"stores a {s.value.dtype} value ({got} lanes) where the index of buffer "
            f"{s.buffer.name!r} addresses {want} lane(s)"
        )
    return index_problem(s.buffer, s.indices)


def buffer_problem(buf: Buffer) -> str | None:
    """A buffer of dtype void, or with a negative constant or non-integer dimension."""
    if buf.dtype.is_void:
        return f"buffer {buf.name!r} has dtype void; give it an element type such as float32"
    return extents_problem(f"buffer {buf.name!r}", (*buf.shape, *buf.strides))


def extents_problem(what: str, extents: tuple[Any, ...]) -> str | None:
    """A non-integer or negative constant extent among ``extents``."""
    for e in extents:
        if not isinstance(e, PrimExpr) or not e.dtype.is_integer:
            return f"{what} has a dimension {e!r} that is not an integer"
        if isinstance(e, IntImm) and e.value < 0:
            return f"{what} has a negative dimension {e.value}"
    return None


def allocate_problem(s: Allocate) -> str | None:
    """An allocation of void elements or of a negative constant extent."""
    if s.dtype.is_void:
        return "allocates elements of dtype void; give it an element type such as float32"
    return extents_problem(f"allocation {s.buffer_var.name!r}", s.extents)


def stmt_problem(s: Stmt) -> str | None:
    """What is wrong with statement ``s`` itself (see the module docstring)."""
    if isinstance(s, BufferStore):
        return store_problem(s)
    if isinstance(s, Allocate):
        return allocate_problem(s)
    return None


def returns_value(ret_type: Any) -> bool:
    """True when a function of return type ``ret_type`` must return a value."""
    if isinstance(ret_type, PointerType):
        return True
    return isinstance(ret_type, PrimType) and not ret_type.dtype.is_void


def always_returns(s: Stmt) -> bool:
    """True when every path through ``s`` ends in ``T.ret`` (loops may run zero times)."""
    while True:
        if isinstance(s, Evaluate):
            v = s.value
            return isinstance(v, Call) and isinstance(v.op, Op) and v.op.name == "tir.ret"
        if isinstance(s, SeqStmt):
            return any(always_returns(x) for x in s.seq)
        if isinstance(s, IfThenElse):
            if s.else_case is None or not always_returns(s.then_case):
                return False
            s = s.else_case
        elif isinstance(s, (LetStmt, AttrStmt, Allocate, DeclBuffer, AssertStmt)):
            s = s.body
        else:
            return False
