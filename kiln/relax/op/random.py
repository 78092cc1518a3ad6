"""Random numbers: ``relax.random.uniform`` and ``normal`` (a tensor of ``shape``) and
``permutation`` (of ``0 .. n-1``), each a pure function of its ``seed``.

The seed is an int64 prim value; the same seed gives the same numbers (`kiln.topi.random`'s
counter-based generator), so the records are pure and fold, fuse and deduplicate like any
other. Fresh numbers per call come from a fresh seed: the torch frontend binds one from
``vm.builtin.random_seed`` (a process-wide counter the VM advances) before its dataflow block.
The values are kiln's own, not any other library's for the same seed. Pattern: ``INJECTIVE``
(``permutation``: ``COMM_REDUCE``).
"""

from __future__ import annotations

from typing import Any

from kiln.ir.dtype import DataType
from kiln.ir.op import Op
from kiln.relax.expr import Call, Expr, PrimValue, ShapeExpr
from kiln.relax.op.common import (
    attrs,
    check_arity,
    describe,
    fail,
    out_dims,
    out_tensor,
    prim_value,
    shape_rank,
    shape_values,
)
from kiln.relax.op.registry import register_op
from kiln.relax.struct_info import INT64, StructInfo, TensorStructInfo
from kiln.tir.expr import IntImm, PrimExpr
from kiln.topi import random as te_random
from kiln.topi.tag import Pattern

FLOATS = tuple(te_random.PRECISION)
"""The dtypes ``uniform`` and ``normal`` make."""


def _seed(call: Call, i: int) -> None:
    sinfo = call.args[i].struct_info_
    prim_value(call, i)
    if not sinfo.dtype.is_integer:
        raise fail(call, f"the seed must be an integer prim value, got {describe(call.args[i])}")


def _prim(v: Any) -> Expr:
    if isinstance(v, Expr):
        return v
    return PrimValue(v if isinstance(v, PrimExpr) else IntImm(INT64, int(v)))


def _infer_draw(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 2)
    _seed(call, 1)
    dtype = call.attrs["dtype"]
    if dtype not in FLOATS:
        raise fail(call, f"dtype {dtype}: expected one of {', '.join(FLOATS)}")
    dims = shape_values(call, 0)
    if dims is None:
        return TensorStructInfo(None, dtype, shape_rank(call, 0))
    return out_tensor(dims, dtype)


def _make_draw(name: str, doc: str) -> Any:
    full_name = f"relax.random.{name}"
    make = getattr(te_random, name)

    def builder(shape: Any, seed: Any, dtype: Any = "float32") -> Call:
        dims = shape if isinstance(shape, Expr) else ShapeExpr(list(shape))
        dt = str(DataType.parse(dtype))
        return Call(Op.get(full_name), (dims, _prim(seed)), attrs(dtype=dt))

    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = doc
    register_op(
        full_name,
        infer=_infer_draw,
        legalize=lambda call, args: make(out_dims(call), args[1], call.attrs["dtype"]),
        pattern=Pattern.INJECTIVE,
    )(builder)
    return builder


uniform = _make_draw("uniform", "Numbers uniform in ``[0, 1)`` of ``shape``, from ``seed``.")
normal = _make_draw("normal", "Standard normal numbers of ``shape``, from ``seed``.")


def _infer_permutation(call: Call, ctx: Any) -> StructInfo:
    check_arity(call, 2)
    _seed(call, 1)
    n = prim_value(call, 0)
    dtype = DataType.parse(call.attrs["dtype"])
    if not dtype.is_integer:
        raise fail(call, f"dtype {dtype}: a permutation needs an integer dtype")
    if n is None:
        return TensorStructInfo(None, dtype, 1)
    if not n.dtype.is_integer:
        raise fail(call, f"the length must be an integer prim value, got {describe(call.args[0])}")
    return out_tensor([n if n.dtype == INT64 else n.astype(INT64)], dtype)


@register_op(
    "relax.random.permutation",
    infer=_infer_permutation,
    legalize=lambda call, args: te_random.permutation(
        out_dims(call)[0], args[1], call.attrs["dtype"]
    ),
    pattern=Pattern.COMM_REDUCE,
)
def permutation(n: Any, seed: Any, dtype: Any = "int64") -> Call:
    """A random order of ``0 .. n-1``, from ``seed``."""
    dt = str(DataType.parse(dtype))
    return Call(Op.get("relax.random.permutation"), (_prim(n), _prim(seed)), attrs(dtype=dt))


__all__ = ["normal", "permutation", "uniform"]
