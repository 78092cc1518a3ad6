"""What is wrong with one TIR node on its own: checks that need no scope or context.

The verifier (`kiln.tir.analysis.verify`) runs them on every node of hand-built or lowered IR; the
script parser runs them on each expression and statement it builds, so a mistake is reported at
the user's line. Each function returns a message naming the node and what was expected, or None.

- an integer division or remainder (``/ // %``, ``truncdiv``...) by the constant zero;
- a shift by a constant that is negative or not less than the operand's bit width;
- a constant index outside a constant dimension (``A[16]`` of a 16-element ``A``, ``A[-1]``),
  a vector index other than the last, a store whose value has other lanes than its index;
- a buffer or allocation of dtype ``void``, with a negative constant or non-integer dimension;
- a value of dtype void where one is used, a vector of handles, arithmetic on handles, a cast
  between a handle and a float, a bitwise operation on floats,
  a load whose dtype has other lanes than its index, an extern call whose function name is not
  a C name, an exported name (``global_symbol``) that is not a string;
- a function declaring a return type whose body can end without returning.
"""

from __future__ import annotations

from typing import Any

from kiln.ir.op import Op
from kiln.tir.buffer import Buffer
from kiln.tir.expr import (
    ARITH_OPS,
    INT_DIVISIONS,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    IntImm,
    PrimExpr,
    Ramp,
    StringImm,
    bitwise_problem,
    division_problem,
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


_BITWISE = ("tir.bitwise_and", "tir.bitwise_or", "tir.bitwise_xor", "tir.bitwise_not", *_SHIFTS)
_EXTERN = ("tir.call_extern", "tir.call_pure_extern")
C_KEYWORDS = frozenset(
    """alignas alignof auto bool break case char const constexpr continue default do double else
    enum extern false float for goto if inline int long nullptr register restrict return short
    signed sizeof static static_assert struct switch thread_local true typedef typeof
    typeof_unqual union unsigned void volatile while""".split()
)
"""The keywords of C23 (an extern function cannot be called by one of these names)."""


def is_c_name(name: Any) -> bool:
    """Whether ``name`` can name a C function: an ASCII identifier that is no C keyword."""
    return (
        isinstance(name, str) and name.isidentifier() and name.isascii() and name not in C_KEYWORDS
    )


def expr_problem(e: PrimExpr, masked: bool = False) -> str | None:
    """What is wrong with expression ``e`` itself (its children are checked on their own).

    ``masked``: ``e`` is evaluated under a lane mask (a vector-condition ``if``), where a vector
    index may run past the end of its buffer in lanes the mask turns off."""
    dt = e.dtype
    if dt.is_void and not isinstance(e, Call):
        return f"a {type(e).__name__} cannot have dtype void (only a call may return nothing)"
    if dt.is_handle and dt.lanes > 1:
        return f"a {type(e).__name__} of {dt}: vectors of handles are not supported"
    if isinstance(e, Call):
        return call_problem(e)
    if isinstance(e, ARITH_OPS) and e.a.dtype.is_handle:  # type: ignore[attr-defined]
        return f"{type(e).__name__} of handles: pointers have no arithmetic here"
    if isinstance(e, Cast) and _float_handle(e.dtype, e.value.dtype):
        return f"a cast from {e.value.dtype} to {e.dtype}: pointers and floats do not convert"
    if isinstance(e, INT_DIVISIONS):
        problem = division_problem(type(e), e.a, e.b)
        if problem is not None:
            return problem
    if isinstance(e, BufferLoad) and isinstance(e.buffer, Buffer):
        lanes = e.indices[-1].dtype.lanes if e.indices else 1
        if e.dtype.lanes != e.buffer.dtype.lanes * lanes:
            return (
                f"loads {e.dtype} ({e.dtype.lanes} lanes) where the index of buffer "
                f"{e.buffer.name!r} addresses {e.buffer.dtype.lanes * lanes} lane(s)"
            )
        return index_problem(e.buffer, e.indices, masked)
    return None


def _float_handle(a: Any, b: Any) -> bool:
    return (a.is_handle and b.is_float) or (a.is_float and b.is_handle)


def call_problem(e: Call) -> str | None:
    """A void argument, a bitwise op on non-integers, a shift out of range, a bad C name."""
    for k, a in enumerate(e.args):
        if isinstance(a, PrimExpr) and a.dtype.is_void:
            return f"argument {k} of {e.op_name} is a call that returns nothing (void)"
    if not isinstance(e.op, Op):
        return None
    name = e.op.name
    if name in _BITWISE and 1 <= len(e.args) <= 2:
        problem = bitwise_problem(name[4:], e.args[0], e.args[1] if len(e.args) == 2 else None)
        if problem is not None:
            return problem
    if name in _EXTERN and not (e.args and isinstance(e.args[0], StringImm)):
        return f"{name[4:]} needs the function's name (a string) as its first argument"
    if name in _EXTERN and isinstance(e.args[0], StringImm):
        if not is_c_name(e.args[0].value):
            return f"{name[4:]} of {e.args[0].value!r}: the function name must be a C name"
    return None


def index_problem(buf: Buffer, indices: tuple[PrimExpr, ...], masked: bool = False) -> str | None:
    """A constant index outside its constant dimension, or a vector index before the last
    (``masked``: only the first lane of a vector index must be in bounds)."""
    for k, (i, dim) in enumerate(zip(indices, buf.shape)):
        if k < len(indices) - 1 and isinstance(i, PrimExpr) and i.dtype.lanes > 1:
            return f"index {k} of buffer {buf.name!r} is a vector; only the last index may be"
        span = const_lanes(i)
        if span is None or not isinstance(dim, IntImm):
            continue
        if masked and isinstance(i, Ramp):
            first = i.base.value  # type: ignore[attr-defined]
            span = (first, first)
        if span[0] < 0 or span[1] >= dim.value:
            bad = span[0] if span[0] < 0 else span[1]
            where = f"dimension {k} of " if len(buf.shape) > 1 else ""
            return (
                f"index {bad} is out of bounds for {where}buffer {buf.name!r} "
                f"(size {dim.value}: valid indices are 0 to {dim.value - 1})"
            )
    return None


def store_problem(s: BufferStore, masked: bool = False) -> str | None:
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
    return index_problem(s.buffer, s.indices, masked)


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


def stmt_problem(s: Stmt, masked: bool = False) -> str | None:
    """What is wrong with statement ``s`` itself (see the module docstring; ``masked`` as for
    `expr_problem`)."""
    if isinstance(s, BufferStore):
        return store_problem(s, masked)
    if isinstance(s, Allocate):
        return allocate_problem(s)
    return None


def func_problem(func: Any) -> str | None:
    """An exported name (``global_symbol``) that is not a string (the C emitter refuses strings
    that are no C name)."""
    sym = func.attrs.get("global_symbol") if hasattr(func, "attrs") else None
    if sym is not None and not isinstance(sym, str):
        return f"global_symbol must be a string, got {sym!r}"
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
