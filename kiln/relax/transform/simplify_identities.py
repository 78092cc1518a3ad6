"""SimplifyIdentities: operator calls that return their operand, or that undo each other, go.

In every graph function that is not primitive, external or a ``Compiler`` function, these
rules (`kiln.relax.pattern`) apply until none does:

- ``x * 1``, ``1 * x``, ``x / 1`` become ``x``; so do ``x + 0``, ``0 + x`` and ``x - 0`` for
  integers. For floats only the sums that are exact for every ``x``, ``-0.0`` included, fold:
  ``x + (-0.0)``, ``(-0.0) + x`` and ``x - 0.0``. ``x + 0.0`` stays (``-0.0 + 0.0`` is
  ``+0.0``), as does ``x - (-0.0)``. The constant may have any shape that does not broadcast
  ``x``: the result must provably have ``x``'s shape and dtype (``x * ones((4, 8))`` of an ``x``
  of shape ``(8,)`` stays);
- ``reshape(reshape(x, s1), s2)`` becomes ``reshape(x, s2)``, and ``reshape(x, s)`` with ``s``
  provably ``x``'s shape becomes ``x``;
- ``permute_dims(permute_dims(x, p1), p2)`` becomes ``permute_dims(x, p1[p2])``, and a
  ``permute_dims`` by the identity permutation becomes ``x``;
- ``astype(x, dtype)`` of an ``x`` of that dtype becomes ``x``.

An inner call still read elsewhere (the first reshape of a chain whose result is also used)
stays; bindings left unused go.

Postcondition: every function computes the same values, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kiln.ir.dtype import DataType
from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.transform import PassContext
from kiln.relax import op as R
from kiln.relax.analysis.primitive import is_lowerable
from kiln.relax.expr import Expr, Function
from kiln.relax.function_pass import FunctionPass
from kiln.relax.pattern import Match, P, Pattern, Rule, is_const, is_op, rewrite, rule, same_tensor
from kiln.relax.struct_info import TensorStructInfo


def _either(op: str, x: Pattern, c: Pattern) -> Pattern:
    """``op(x, c)`` or ``op(c, x)`` (a commutative operator)."""
    return is_op(op)(x, c) | is_op(op)(c, x)


def _ints(data: Any) -> bool:
    return data.dtype.kind in "iu"


def _floats(data: Any) -> bool:
    return data.dtype.kind == "f"


ONE = is_const(1)
INT_ZERO = is_const(0, _ints)


@rule(_either("relax.multiply", P.x, ONE) | is_op("relax.divide")(P.x, ONE))
def times_one(m: Match) -> Expr | None:
    return m.x if same_tensor(m.x, m.root) else None


@rule(
    _either("relax.add", P.x, INT_ZERO | is_const(-0.0, _floats))
    | is_op("relax.subtract")(P.x, INT_ZERO | is_const(0.0, _floats))
)
def plus_zero(m: Match) -> Expr | None:
    return m.x if same_tensor(m.x, m.root) else None


@rule(is_op("relax.reshape")(is_op("relax.reshape")(P.x, P._), P.shape))
def reshape_of_reshape(m: Match) -> Expr | None:
    return R.reshape(m.x, m.shape)


@rule(is_op("relax.reshape")(P.x, P._))
def reshape_to_own_shape(m: Match) -> Expr | None:
    return m.x if same_tensor(m.x, m.root) else None


def _axes(axes: Any, ndim: int) -> list[int]:
    """A ``permute_dims`` ``axes`` attribute as a permutation of ``range(ndim)``."""
    return list(range(ndim))[::-1] if axes is None else [int(a) % ndim for a in axes]


@rule(is_op("relax.permute_dims", axes=P.p2)(is_op("relax.permute_dims", axes=P.p1)(P.x)))
def permute_of_permute(m: Match) -> Expr | None:
    ndim = getattr(m.x.struct_info_, "ndim", -1)
    if ndim < 0:
        return None
    p1, p2 = _axes(m.p1, ndim), _axes(m.p2, ndim)
    return R.permute_dims(m.x, [p1[a] for a in p2])


@rule(is_op("relax.permute_dims", axes=P.axes)(P.x))
def identity_permutation(m: Match) -> Expr | None:
    ndim = getattr(m.x.struct_info_, "ndim", -1)
    if ndim < 0 or _axes(m.axes, ndim) != list(range(ndim)):
        return None
    return m.x


@rule(is_op("relax.astype", dtype=P.dtype)(P.x))
def astype_to_own_dtype(m: Match) -> Expr | None:
    sinfo = m.x.struct_info_
    if not isinstance(sinfo, TensorStructInfo) or sinfo.dtype.is_void:
        return None
    return m.x if sinfo.dtype == DataType.parse(m.dtype) else None


RULES: list[Rule] = [
    times_one,
    plus_zero,
    reshape_of_reshape,
    reshape_to_own_shape,
    permute_of_permute,
    identity_permutation,
    astype_to_own_dtype,
]


@dataclass(frozen=True)
class SimplifyIdentities(FunctionPass):
    """Identity operations removed by rewrite rules (see the module docstring)."""

    name: ClassVar[str] = "simplify-identities"

    def transform(self, gv: GlobalVar, func: Function, mod: IRModule, ctx: PassContext) -> BaseFunc:
        return rewrite(func, RULES, mod) if is_lowerable(func) else func


__all__ = ["RULES", "SimplifyIdentities"]
