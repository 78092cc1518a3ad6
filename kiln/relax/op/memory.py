"""Explicit memory: storage and the tensors that view it, as the VM lowering passes write them.

- ``memory.alloc_storage(size, virtual_device_index, storage_scope, dtype)``: a block of
  ``size`` (a 1-D shape: the number of ``dtype`` elements, bytes for ``uint8``) on device
  ``virtual_device_index`` (0: the VM's device) in scope ``storage_scope`` ("global").
- ``memory.alloc_tensor(storage, offset, shape, dtype)``: a tensor of ``shape`` and ``dtype``
  viewing ``storage`` from byte ``offset``.

`StaticPlanBlockMemory` writes both (one storage shared by the intermediates that are never
alive together); `VMBuiltinLower` turns them into ``vm.builtin.alloc_storage`` /
``vm.builtin.alloc_tensor`` calls. Pure: an allocation has no effect besides its result.
"""

from __future__ import annotations

from typing import Any

from kiln.errors import IRError
from kiln.ir.dtype import DataType
from kiln.ir.op import Op
from kiln.relax.expr import Call, DataTypeImm, Expr, PrimValue, ShapeExpr, StringImm
from kiln.relax.op.common import check_arity, describe, fail, shape_values
from kiln.relax.op.registry import register_op
from kiln.relax.struct_info import (
    ObjectStructInfo,
    PrimStructInfo,
    StructInfo,
    TensorStructInfo,
)
from kiln.topi.tag import Pattern

_BY_VM = "VMBuiltinLower (kiln/relax/transform/vm_builtin_lower.py) turns it into a VM builtin"


def shape_arg(shape: Any) -> Expr:
    """A shape argument from a `ShapeExpr`, a shape-valued expression or a list of dims."""
    if isinstance(shape, Expr):
        return shape
    return ShapeExpr(list(shape) if isinstance(shape, (list, tuple)) else [shape])


def dtype_arg(dtype: Any) -> DataTypeImm:
    """A dtype argument from a `DataTypeImm`, a `DataType` or its name."""
    if isinstance(dtype, DataTypeImm):
        return dtype
    return DataTypeImm(dtype if isinstance(dtype, DataType) else DataType.parse(dtype))


def int_arg(value: Any) -> Expr:
    """An int64 prim value argument (a Python int or a `PrimValue`)."""
    return value if isinstance(value, Expr) else PrimValue(int(value))


def dtype_of(call: Call, i: int) -> DataType:
    """The dtype a `DataTypeImm` argument names."""
    arg = call.args[i]
    if not isinstance(arg, DataTypeImm):
        raise fail(call, f"argument {i} must be a dtype (R.dtype), got {describe(arg)}")
    return arg.value


def check_prim(call: Call, i: int, what: str) -> None:
    if not isinstance(call.args[i].struct_info_, PrimStructInfo):
        raise fail(call, f"{what} must be an int prim value, got {describe(call.args[i])}")


def _infer_alloc_storage(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 4)
    size = shape_values(call, 0)
    if size is not None and len(size) != 1:
        raise fail(call, f"the size must be a 1-D shape, got {describe(call.args[0])}")
    check_prim(call, 1, "the device index")
    if not isinstance(call.args[2], StringImm):
        raise fail(call, f"the storage scope must be a string, got {describe(call.args[2])}")
    dtype_of(call, 3)
    return ObjectStructInfo()


@register_op(
    "relax.memory.alloc_storage",
    infer=_infer_alloc_storage,
    legalize=None,
    pattern=Pattern.OPAQUE,
    lowered_by=_BY_VM,
)
def alloc_storage(
    size: Any, virtual_device_index: Any = 0, storage_scope: str = "global", dtype: Any = "uint8"
) -> Call:
    """Storage of ``size`` ``dtype`` elements on the VM's device (see the module docstring)."""
    scope = storage_scope if isinstance(storage_scope, StringImm) else StringImm(storage_scope)
    args = (shape_arg(size), int_arg(virtual_device_index), scope, dtype_arg(dtype))
    return Call(Op.get("relax.memory.alloc_storage"), args)


def _infer_alloc_tensor(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 4)
    if not isinstance(call.args[0].struct_info_, ObjectStructInfo):
        raise fail(call, f"argument 0 must be a storage, got {describe(call.args[0])}")
    check_prim(call, 1, "the offset")
    dims = shape_values(call, 2)
    dtype = dtype_of(call, 3)
    if dims is None:
        raise IRError(f"{call.op.name}: the shape must be known, got {describe(call.args[2])}")
    return TensorStructInfo(list(dims), dtype)


@register_op(
    "relax.memory.alloc_tensor",
    infer=_infer_alloc_tensor,
    legalize=None,
    pattern=Pattern.OPAQUE,
    lowered_by=_BY_VM,
)
def alloc_tensor(storage: Expr, offset: Any, shape: Any, dtype: Any) -> Call:
    """A tensor of ``shape`` and ``dtype`` viewing ``storage`` from byte ``offset``."""
    args = (storage, int_arg(offset), shape_arg(shape), dtype_arg(dtype))
    return Call(Op.get("relax.memory.alloc_tensor"), args)


__all__ = ["alloc_storage", "alloc_tensor", "dtype_arg", "int_arg", "shape_arg"]
