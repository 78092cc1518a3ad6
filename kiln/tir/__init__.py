"""The tensor-level IR: expressions, statements, buffers, PrimFuncs, builtins, visitors.

`get_type` and `verify_well_formed` come from `kiln.tir.analysis`, loaded on first use: the
analyses build on `kiln.arith`, which builds on this package, so loading them with it would make
``import kiln.arith`` before ``kiln.tir`` circular.
"""

import importlib
from types import ModuleType

from kiln.ir.visitor import Mutator, Visitor, post_order_visit, pre_order_nodes
from kiln.tir import builtin
from kiln.tir.buffer import Buffer, decl_buffer
from kiln.tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Select,
    SizeVar,
    StringImm,
    Sub,
    Var,
    const,
    convert,
)
from kiln.tir.function import PrimFunc
from kiln.tir.functor import substitute
from kiln.tir.op import (
    access_ptr,
    address_of,
    call_cpacked,
    call_extern,
    call_intrin,
    call_packed,
    call_pure_extern,
    cast,
    exp,
    floordiv,
    floormod,
    if_then_else,
    isnullptr,
    math,
    max_value,
    min_value,
    reinterpret,
    sqrt,
    truncdiv,
    truncmod,
    type_annotation,
)
from kiln.tir.stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    BufferStore,
    DeclBuffer,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IterKind,
    IterVar,
    LetStmt,
    Range,
    SeqStmt,
    Stmt,
    While,
    seq,
)
from kiln.tir.type import VOID, PointerType, PrimType, TupleType, pointer_to

_ANALYSES = ("get_type", "verify_well_formed")

__all__ = [
    name
    for name, value in dict(globals()).items()
    if not name.startswith("_") and not isinstance(value, ModuleType)
] + list(_ANALYSES)


def __getattr__(name: str) -> object:
    if name in _ANALYSES:
        return getattr(importlib.import_module("kiln.tir.analysis"), name)
    raise AttributeError(f"module 'kiln.tir' has no attribute {name!r}")
