"""`get_type`: the type of a TIR expression, with typed pointers where the IR knows them.

``tvm_access_ptr(type_annotation(T), ...)`` and ``address_of(buf[i])`` are pointers to their
element type (seed 000), so a C declaration built from a call's arguments is typed, not ``void*``.
"""

from __future__ import annotations

from kiln.ir.op import Op
from kiln.tir.expr import BufferLoad, Call, PrimExpr, Var
from kiln.tir.type import PointerType, PrimType, TupleType


def get_type(e: PrimExpr) -> PrimType | PointerType | TupleType:
    """The type of ``e``: a var's annotation, a typed pointer for pointer builtins, else prim."""
    if isinstance(e, Var):
        return e.type_annotation or PrimType(e.dtype)
    if isinstance(e, Call) and isinstance(e.op, Op):
        if e.op.name == "tir.tvm_access_ptr" and e.args:
            return PointerType(PrimType(e.args[0].dtype))
        if e.op.name == "tir.address_of" and e.args and isinstance(e.args[0], BufferLoad):
            load = e.args[0]
            return PointerType(PrimType(load.buffer.dtype), _scope(load.buffer.data))
    return PrimType(e.dtype)


def _scope(data: Var) -> str:
    ty = data.type_annotation
    return ty.storage_scope if isinstance(ty, PointerType) else ""
