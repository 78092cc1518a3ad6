"""The ``T`` namespace of TVMScript: ``from kiln.script import tir as T``.

Types and literals (``T.int32``, ``T.float32(1)``, ``T.handle("float32")``, ``T.Buffer(...)``),
statements (loops, ``T.launch_thread``, ``T.alloc_buffer``, ``T.attr``...), expression builders
(``T.exp``, ``T.call_extern``, ``T.if_then_else``, ``T.max``...) and the ``@T.prim_func``
decorator. Any dtype name works as a type: ``T.float16x8``, ``T.int8``.
"""

from __future__ import annotations

from typing import Any

from kiln.ir.dtype import DataType
from kiln.script.parser.entry import prim_func
from kiln.script.tir_ns.api import (
    Assert,
    LetStmt,
    alloc_buffer,
    allocate,
    attr,
    decl_buffer,
    env_thread,
    func_attr,
    grid,
    launch_thread,
    match_buffer,
    parallel,
    serial,
    thread_binding,
    unroll,
    vectorized,
)
from kiln.script.tir_ns.frames import evaluate
from kiln.script.tir_ns.intrin import (
    INTRINSICS,
    Broadcast,
    Cast,
    Let,
    Ramp,
    Range,
    Select,
    call_intrin,
    cast,
    floordiv,
    floormod,
    iter_var,
    max,
    max_value,
    min,
    min_value,
    truncdiv,
    truncmod,
)
from kiln.script.tir_ns.types import BufferCtor, DTypeCtor, HandleCtor
from kiln.tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Mod,
    Mul,
    Not,
    Or,
    StringImm,
    Sub,
)

globals().update(INTRINSICS)  # T.exp, T.call_extern, T.anylist_getitem, ... (see intrin.py)

Buffer = BufferCtor()
handle = HandleCtor("handle")
bool = DTypeCtor("bool")  # noqa: A001 - TVMScript name
int8, int16, int32, int64 = (DTypeCtor(f"int{b}") for b in (8, 16, 32, 64))
uint8, uint16, uint32, uint64 = (DTypeCtor(f"uint{b}") for b in (8, 16, 32, 64))
float16, float32, float64 = (DTypeCtor(f"float{b}") for b in (16, 32, 64))
bfloat16 = DTypeCtor("bfloat16")
float8_e4m3fn = DTypeCtor("float8_e4m3fn")
float8_e5m2 = DTypeCtor("float8_e5m2")
ramp = Ramp


def __getattr__(name: str) -> Any:
    """Vector and other dtypes on demand: ``T.float32x4``, ``T.int1``..."""
    try:
        DataType.parse(name)
    except Exception:
        raise AttributeError(f"module 'kiln.script.tir' has no attribute {name!r}") from None
    ctor = DTypeCtor(name)
    globals()[name] = ctor
    return ctor


__all__ = [
    "EQ",
    "GE",
    "GT",
    "LE",
    "LT",
    "NE",
    "Add",
    "And",
    "Assert",
    "Broadcast",
    "Buffer",
    "Cast",
    "Div",
    "FloatImm",
    "FloorDiv",
    "FloorMod",
    "IntImm",
    "Let",
    "LetStmt",
    "Mod",
    "Mul",
    "Not",
    "Or",
    "Ramp",
    "Range",
    "Select",
    "StringImm",
    "Sub",
    "alloc_buffer",
    "allocate",
    "attr",
    "bfloat16",
    "bool",
    "call_intrin",
    "cast",
    "decl_buffer",
    "env_thread",
    "evaluate",
    "float16",
    "float32",
    "float64",
    "float8_e4m3fn",
    "float8_e5m2",
    "floordiv",
    "floormod",
    "func_attr",
    "grid",
    "handle",
    "int16",
    "int32",
    "int64",
    "int8",
    "iter_var",
    "launch_thread",
    "match_buffer",
    "max",
    "max_value",
    "min",
    "min_value",
    "parallel",
    "prim_func",
    "ramp",
    "serial",
    "thread_binding",
    "truncdiv",
    "truncmod",
    "uint16",
    "uint32",
    "uint64",
    "uint8",
    "unroll",
    "vectorized",
    *INTRINSICS,
]
