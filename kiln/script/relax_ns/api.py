"""The statement-level functions and literals of the R namespace.

Markers (inert data the relax parser acts on): ``R.dataflow()`` (a ``with`` block),
``R.output(...)`` (the variables a dataflow block exports), ``R.func_attr({...})``,
``R.match_cast(value, sinfo)``. Literals build IR directly: ``R.const``, ``R.shape``,
``R.prim_value``, ``R.str``, ``R.dtype``, ``R.tuple``, ``R.ExternFunc``.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

from kiln.errors import IRError, IRValueError
from kiln.ir.dtype import DataType
from kiln.relax.expr import (
    Constant,
    DataTypeImm,
    Expr,
    ExternFunc,
    PrimValue,
    ShapeExpr,
    StringImm,
    Tuple,
)
from kiln.relax.expr import const as _const
from kiln.script.metadata import MetadataRef
from kiln.script.tir_ns.frames import FuncAttrs


class DataflowFrame:
    """``with R.dataflow():`` a block of pure bindings."""

    kiln_relax_marker = "dataflow"


@dataclass(frozen=True)
class OutputMarker:
    """``R.output(a, b)``: the variables of a dataflow block visible after it."""

    values: tuple[Any, ...]


@dataclass(frozen=True)
class MatchCastSpec:
    """``x = R.match_cast(value, sinfo)``."""

    value: Any
    struct_info: Any


def dataflow() -> DataflowFrame:
    """``with R.dataflow():``: a dataflow block (end it with ``R.output(...)``)."""
    return DataflowFrame()


def output(*values: Any) -> OutputMarker:
    """``R.output(a, b)``: export ``a`` and ``b`` from the enclosing dataflow block."""
    return OutputMarker(values)


def func_attr(attrs: Any) -> FuncAttrs:
    """``R.func_attr({...})``: attributes of the enclosing function."""
    return FuncAttrs(attrs)


def match_cast(value: Any, struct_info: Any) -> MatchCastSpec:
    """``x = R.match_cast(value, R.Tensor(("m",), "float32"))``: a checked cast that defines
    the new symbolic variables of the struct info."""
    return MatchCastSpec(value, struct_info)


def const(value: Any, dtype: Any = None, shape: Any = None) -> Constant:
    """A constant tensor (ints default to int64, floats to float32).

    ``shape=`` states the data's shape and is checked. A metadata reference
    (``R.const(metadata["relax.Constant"][3], "float32", shape=(64, 3))``, see
    `kiln.script.metadata`) takes its array from the metadata section, checked against ``dtype``
    and ``shape``.
    """
    if dtype is not None and not isinstance(dtype, (builtins.str, DataType)):
        dtype = builtins.str(dtype)
    if isinstance(value, MetadataRef):
        return value.constant(dtype, shape)
    out = _const(value, dtype)
    if shape is not None:
        want = builtins.tuple(shape) if isinstance(shape, (list, builtins.tuple)) else (shape,)
        if want != out.data.shape:
            raise IRValueError(
                f"R.const: the data has shape {out.data.shape} but shape={shape!r} was given"
            )
    return out


def shape(values: Any) -> ShapeExpr:
    """A shape value: ``R.shape([n, 4])``."""
    return ShapeExpr(list(values))


def prim_value(value: Any) -> PrimValue:
    """A scalar value (a `tir` expression; Python ints become int64)."""
    return PrimValue(value)


def str(value: Any) -> StringImm:  # noqa: A001 - TVMScript name
    """A string value."""
    return StringImm(value)


def dtype(value: Any) -> DataTypeImm:
    """A dtype value."""
    return DataTypeImm(DataType.parse(value) if not isinstance(value, DataType) else value)


def tuple(*fields: Any) -> Tuple:  # noqa: A001 - TVMScript name
    """A tuple value (``R.tuple()`` is the empty tuple)."""
    for f in fields:
        if not isinstance(f, Expr):
            raise IRError(f"R.tuple: fields must be relax values, got {f!r}")
    return Tuple(fields)


__all__ = [
    "DataflowFrame",
    "ExternFunc",
    "MatchCastSpec",
    "OutputMarker",
    "const",
    "dataflow",
    "dtype",
    "func_attr",
    "match_cast",
    "output",
    "prim_value",
    "shape",
    "str",
    "tuple",
]
