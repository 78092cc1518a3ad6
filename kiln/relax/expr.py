"""Graph-level (relax) expressions.

Leaves: `Var` / `DataflowVar` (binders), `Constant` (a numpy array), `ShapeExpr`, `PrimValue`,
`StringImm`, `DataTypeImm`, `ExternFunc` (a packed function by name); compound: `Tuple`,
`TupleGetItem`, `Call`, `If`, `SeqExpr`, `Function`. A `Call`'s ``op`` is an `Op`, a `GlobalVar`,
an `ExternFunc` or a `Var` bound to a function.

Every expression has a ``struct_info_`` field: given for variables (their annotation), derived
for the rest. Leaves derive theirs when built; compound expressions get theirs from
`BlockBuilder.normalize` (which asks the operator records). NOTE: nodes are frozen, but a
derived struct info is a pure function of the node, so normalization fills the field in place
when it is still None (as TVM does); identity is preserved. ``expr.struct_info`` reads it and
raises when the expression was never normalized. Only a variable's struct info takes part in
structural comparison.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from kiln.errors import IRError
from kiln.ir.dtype import DataType
from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.node import EMPTY_ATTRS, Attrs, Node, as_attrs
from kiln.ir.op import Op
from kiln.ir.span import Span
from kiln.relax.struct_info import (
    INT64,
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
    as_dims,
)
from kiln.tir.expr import IntImm, PrimExpr, convert

_IGNORE = ("struct_info_", "span")


def _set(obj: Any, name: str, value: Any) -> None:
    object.__setattr__(obj, name, value)


class Expr(Node):
    """Base of relax expressions (see the module docstring)."""

    __slots__ = ()
    _ignore_fields: ClassVar[tuple[str, ...]] = _IGNORE
    struct_info_: StructInfo | None

    @property
    def struct_info(self) -> StructInfo:
        """The struct info of this expression (raises if it was never normalized)."""
        sinfo = self.struct_info_
        if sinfo is None:
            raise IRError(
                f"{type(self).__name__} has no struct info yet; normalize it first "
                "(BlockBuilder.normalize)"
            )
        return sinfo

    def __getitem__(self, index: int) -> TupleGetItem:
        """``t[i]`` of a tuple-valued expression."""
        if not isinstance(index, int) or isinstance(index, bool):
            raise IRError(f"a tuple is indexed with a constant int, got {index!r}")
        return TupleGetItem(self, index)

    def astype(self, dtype: str | DataType) -> Call:
        """``R.astype(self, dtype)``: the call its op record builds (`kiln.relax.op` is a row
        above this module, so the call is made here)."""
        return Call(Op.get("relax.astype"), (self,), Attrs({"dtype": str(DataType.parse(dtype))}))


@dataclass(frozen=True, slots=True, eq=False)
class Var(Expr):
    """A variable, defined once (a parameter or a binding); its struct info is its annotation."""

    name_hint: str
    struct_info_: StructInfo | None = None
    span: Span | None = None
    _binder: ClassVar[bool] = True
    _ignore_fields: ClassVar[tuple[str, ...]] = ("name_hint", "span")

    def __post_init__(self) -> None:
        if not isinstance(self.name_hint, str) or not self.name_hint:
            raise IRError(f"Var needs a non-empty name, got {self.name_hint!r}")
        if self.struct_info_ is not None and not isinstance(self.struct_info_, StructInfo):
            raise IRError(
                f"Var {self.name_hint!r}: expected struct info, got {self.struct_info_!r}"
            )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name_hint!r})"


@dataclass(frozen=True, slots=True, eq=False)
class DataflowVar(Var):
    """A variable local to a dataflow block (it cannot be used after the block)."""


@dataclass(frozen=True, slots=True, eq=False)
class Constant(Expr):
    """A constant tensor held as a numpy array."""

    data: np.ndarray
    struct_info_: StructInfo | None = None
    span: Span | None = None

    def __post_init__(self) -> None:
        data = self.data
        if not isinstance(data, np.ndarray):
            data = np.asarray(data)
            _set(self, "data", data)
        if data.dtype.kind not in "biuf":
            raise IRError(f"Constant: unsupported array dtype {data.dtype}")
        dtype = "bool" if data.dtype.kind == "b" else str(data.dtype)
        _set(self, "struct_info_", TensorStructInfo(list(data.shape), dtype))

    @property
    def dtype(self) -> DataType:
        return self.struct_info_.dtype  # type: ignore[union-attr]


def const(value: Any, dtype: str | DataType | None = None) -> Constant:
    """A `Constant` from a number, nested list or array (ints default to int64 as in numpy,
    floats to float32)."""
    if dtype is not None:
        dt = DataType.parse(dtype)
        data = np.asarray(value, dtype="bool" if dt.is_bool else str(dt))
    else:
        data = np.asarray(value)
        if data.dtype == np.float64 and not isinstance(value, np.ndarray):
            data = data.astype("float32")
    return Constant(data)


@dataclass(frozen=True, slots=True, eq=False)
class ShapeExpr(Expr):
    """A shape value built from int64 `tir` expressions (``R.shape([n, 4])``)."""

    values: tuple[PrimExpr, ...]
    struct_info_: StructInfo | None = None
    span: Span | None = None
    _def_fields: ClassVar[tuple[str, ...]] = ("values",)

    def __post_init__(self) -> None:
        values = as_dims(self.values, "shape")
        _set(self, "values", values)
        _set(self, "struct_info_", ShapeStructInfo(values))

    def __getitem__(self, index: int) -> PrimExpr:  # type: ignore[override]
        return self.values[index]

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self) -> Any:
        return iter(self.values)


@dataclass(frozen=True, slots=True, eq=False)
class PrimValue(Expr):
    """A scalar `tir` expression used as a graph-level value (Python ints become int64)."""

    value: PrimExpr
    struct_info_: StructInfo | None = None
    span: Span | None = None

    def __post_init__(self) -> None:
        value = self.value
        if isinstance(value, int) and not isinstance(value, bool):
            value = IntImm(INT64, value)
        elif not isinstance(value, PrimExpr):
            value = convert(value, "float64" if isinstance(value, float) else None)
        _set(self, "value", value)
        _set(self, "struct_info_", PrimStructInfo(value=value))


@dataclass(frozen=True, slots=True, eq=False)
class StringImm(Expr):
    """A string value (an attribute passed as an argument, a packed function's name...)."""

    value: str
    struct_info_: StructInfo | None = None
    span: Span | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.value, str):
            raise IRError(f"StringImm needs a str, got {self.value!r}")
        _set(self, "struct_info_", ObjectStructInfo())


@dataclass(frozen=True, slots=True, eq=False)
class DataTypeImm(Expr):
    """A dtype used as a value (``R.dtype("float32")``)."""

    value: DataType
    struct_info_: StructInfo | None = None
    span: Span | None = None

    def __post_init__(self) -> None:
        _set(self, "value", DataType.parse(self.value))
        _set(self, "struct_info_", ObjectStructInfo())


@dataclass(frozen=True, slots=True, eq=False)
class ExternFunc(Expr):
    """A packed function found by name at run time (``R.call_packed("name", ...)``)."""

    global_symbol: str
    struct_info_: StructInfo | None = None
    span: Span | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.global_symbol, str) or not self.global_symbol:
            raise IRError(f"ExternFunc needs a symbol name, got {self.global_symbol!r}")
        if self.struct_info_ is None:
            _set(self, "struct_info_", FuncStructInfo.opaque_func())


@dataclass(frozen=True, slots=True, eq=False)
class Tuple(Expr):
    """A tuple of values."""

    fields: tuple[Expr, ...]
    struct_info_: StructInfo | None = None
    span: Span | None = None

    def __post_init__(self) -> None:
        fields = tuple(self.fields)
        for f in fields:
            if not isinstance(f, Expr):
                raise IRError(f"Tuple fields must be relax expressions, got {f!r}")
        _set(self, "fields", fields)
        if self.struct_info_ is None and all(f.struct_info_ is not None for f in fields):
            _set(self, "struct_info_", TupleStructInfo(tuple(f.struct_info_ for f in fields)))

    def __len__(self) -> int:
        return len(self.fields)


@dataclass(frozen=True, slots=True, eq=False)
class TupleGetItem(Expr):
    """Field ``index`` of a tuple value."""

    tuple_value: Expr
    index: int
    struct_info_: StructInfo | None = None
    span: Span | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.tuple_value, Expr):
            raise IRError(f"TupleGetItem needs a relax expression, got {self.tuple_value!r}")
        if isinstance(self.index, bool) or not isinstance(self.index, int):
            raise IRError(f"TupleGetItem index must be an int, got {self.index!r}")


@dataclass(frozen=True, slots=True, eq=False)
class Call(Expr):
    """A call of an operator, a module function, a packed function or a local function.

    ``attrs`` are the operator's static attributes; ``sinfo_args`` give the result struct info
    where it cannot be derived (``call_tir``'s outputs, ``call_packed``'s result).
    """

    op: Any
    args: tuple[Expr, ...] = ()
    attrs: Attrs = EMPTY_ATTRS
    sinfo_args: tuple[StructInfo, ...] = ()
    struct_info_: StructInfo | None = None
    span: Span | None = None

    def __post_init__(self) -> None:
        op = self.op
        if isinstance(op, str):
            op = Op.get(op)
            _set(self, "op", op)
        if not isinstance(op, (Op, GlobalVar, ExternFunc, Var, Function)):
            raise IRError(f"Call op must be an Op, GlobalVar, ExternFunc or Var, got {op!r}")
        args = tuple(self.args)
        for a in args:
            if not isinstance(a, (Expr, GlobalVar)):
                raise IRError(f"call of {op_name(op)}: argument {a!r} is not a relax expression")
        _set(self, "args", args)
        _set(self, "attrs", as_attrs(self.attrs))
        sinfo_args = (
            (self.sinfo_args,) if isinstance(self.sinfo_args, StructInfo) else self.sinfo_args
        )
        _set(self, "sinfo_args", tuple(sinfo_args))
        for s in self.sinfo_args:
            if not isinstance(s, StructInfo):
                raise IRError(f"call of {op_name(op)}: sinfo_args must be struct info, got {s!r}")


def op_name(op: Any) -> str:
    """A readable name of a call's callee."""
    if isinstance(op, Op):
        return op.name
    if isinstance(op, GlobalVar):
        return op.name_hint
    if isinstance(op, ExternFunc):
        return op.global_symbol
    if isinstance(op, Var):
        return op.name_hint
    return type(op).__name__


@dataclass(frozen=True, slots=True, eq=False)
class If(Expr):
    """``cond ? true_branch : false_branch``; ``cond`` is a bool scalar tensor (or a prim
    value); each branch is a `SeqExpr`."""

    cond: Expr
    true_branch: Expr
    false_branch: Expr
    struct_info_: StructInfo | None = None
    span: Span | None = None


@dataclass(frozen=True, slots=True, eq=False)
class SeqExpr(Expr):
    """Binding blocks evaluated in order, then ``body``."""

    blocks: tuple[Any, ...]
    body: Expr
    struct_info_: StructInfo | None = None
    span: Span | None = None

    def __post_init__(self) -> None:
        _set(self, "blocks", tuple(self.blocks))
        if not isinstance(self.body, Expr):
            raise IRError(f"SeqExpr body must be a relax expression, got {self.body!r}")


@dataclass(frozen=True, slots=True, eq=False)
class Function(BaseFunc, Expr):
    """A graph-level function: parameters, a body, its return struct info, purity and
    attributes. Module-level functions live in an `IRModule` beside PrimFuncs; a function
    bound inside another is a local function (a closure over the variables it uses)."""

    params: tuple[Var, ...]
    body: Expr
    ret_struct_info: StructInfo | None = None
    is_pure: bool = True
    attrs: Attrs = EMPTY_ATTRS
    struct_info_: StructInfo | None = None
    span: Span | None = None
    _def_fields: ClassVar[tuple[str, ...]] = ("params",)

    def __post_init__(self) -> None:
        params = tuple(self.params)
        for p in params:
            if not isinstance(p, Var):
                raise IRError(f"Function parameters must be relax Vars, got {p!r}")
            if p.struct_info_ is None:
                raise IRError(f"Function parameter {p.name_hint!r} needs struct info")
        _set(self, "params", params)
        _set(self, "attrs", as_attrs(self.attrs))
        if not isinstance(self.body, Expr):
            raise IRError(f"Function body must be a relax expression, got {self.body!r}")
        ret = self.ret_struct_info
        if ret is None and self.body.struct_info_ is not None:
            ret = self.body.struct_info_
            _set(self, "ret_struct_info", ret)
        if ret is not None and self.struct_info_ is None:
            sinfo = FuncStructInfo(tuple(p.struct_info_ for p in params), ret, bool(self.is_pure))
            _set(self, "struct_info_", sinfo)

    def __repr__(self) -> str:
        return f"Function({self.global_symbol or '<private>'})"


LEAF_TYPES = (
    Var,
    Constant,
    ShapeExpr,
    PrimValue,
    StringImm,
    DataTypeImm,
    ExternFunc,
    GlobalVar,
    Op,
)


def is_leaf(e: Any) -> bool:
    """Whether ``e`` may appear as a call argument in normal form (a tuple of leaves is one)."""
    if isinstance(e, LEAF_TYPES):
        return True
    return isinstance(e, Tuple) and all(is_leaf(f) for f in e.fields)
