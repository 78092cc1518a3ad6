"""LegalizeStorage: narrow float types without native arithmetic are stored narrow, computed in f32.

For every PrimFunc and every *legalized* dtype (bfloat16, float8_e4m3fn, float8_e5m2 by default;
see `legalized_dtypes` for what each target computes natively):

- a load from a buffer of that dtype is widened: ``Cast(float32, load)``;
- arithmetic, comparisons, selects and math calls on such values run in float32 (no rounding
  between operations);
- a store into such a buffer rounds once, to nearest even: ``Cast(bf16, value_f32)``; so does
  an explicit ``Cast`` to the type and a ``Let``/``LetStmt`` binding of a variable of the type
  (the variable keeps its narrow dtype; its uses are widened);
- literals of the type become ``Cast(float32, literal)`` (the literal's exact narrow value);
- opaque calls (``call_extern``, ``reinterpret``...) still receive and return the narrow type.

Postcondition: no arithmetic node has a legalized dtype; narrow values appear only as loads,
variables, literals and the operand of a widening cast, and as stored / bound values under a
narrowing cast. Results match numpy computing in float32 and ml_dtypes rounding on store,
bit for bit. Vectors follow lane-wise.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from kiln.ir.dtype import DataType
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.op import Op
from kiln.ir.transform import PassContext
from kiln.ir.visitor import Mutator
from kiln.tir import expr as E
from kiln.tir import stmt as S
from kiln.tir.attrs import TARGET
from kiln.tir.function import PrimFunc, PrimFuncPass

DEFAULT_DTYPES = frozenset({"bfloat16", "float8_e4m3fn", "float8_e5m2"})
"""Types no target computes in natively by default."""


def legalized_dtypes(target: Any) -> frozenset[str]:
    """The narrow types ``target`` has no arithmetic for: CUDA computes bfloat16 from sm_80 on."""
    kind = getattr(target, "kind", None)
    if kind == "cuda":
        arch = str(target.get("arch", "sm_90"))
        digits = "".join(ch for ch in arch if ch.isdigit())
        if digits and int(digits) >= 80:
            return DEFAULT_DTYPES - {"bfloat16"}
    return DEFAULT_DTYPES


@dataclass(frozen=True)
class LegalizeStorage(PrimFuncPass):
    """Compute narrow float types in float32, rounding on store (see module docstring).

    ``dtypes`` names the types to legalize; by default, those the function's target lacks."""

    dtypes: frozenset[str] | None = None
    name: ClassVar[str] = "legalize-storage"

    def __post_init__(self) -> None:
        if self.dtypes is not None:
            object.__setattr__(self, "dtypes", frozenset(self.dtypes))

    def transform(self, gv: GlobalVar, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        narrow = self.dtypes
        if narrow is None:
            narrow = legalized_dtypes(func.get_attr(TARGET))
        return func.with_body(_Widen(narrow).visit(func.body))


class _Widen(Mutator):
    """Rewrites expressions of the narrow types into float32 ones (see module docstring)."""

    def __init__(self, narrow: frozenset[str]) -> None:
        super().__init__()
        self.narrow = narrow

    def is_narrow(self, dtype: DataType) -> bool:
        return str(dtype.element_of()) in self.narrow

    @staticmethod
    def f32(dtype: DataType) -> DataType:
        return DataType("float", 32, dtype.lanes)

    def widen(self, e: E.PrimExpr) -> E.PrimExpr:
        """``e`` narrow (after rewriting) as a float32 value."""
        return E.Cast(self.f32(e.dtype), e)

    def narrow_to(self, dtype: DataType, e: E.PrimExpr) -> E.PrimExpr:
        """A float32 value ``e`` rounded to the narrow ``dtype`` (unwraps a widening cast)."""
        if isinstance(e, E.Cast) and e.value.dtype == dtype:
            return e.value
        return E.Cast(dtype, e) if e.dtype != dtype else e

    # -- leaves -----------------------------------------------------------------------------
    def visit_Var(self, v: E.Var) -> E.PrimExpr:
        return self.widen(v) if self.is_narrow(v.dtype) else v

    def visit_FloatImm(self, e: E.FloatImm) -> E.PrimExpr:
        return self.widen(e) if self.is_narrow(e.dtype) else e

    def visit_BufferLoad(self, e: E.BufferLoad) -> E.PrimExpr:
        indices = tuple(self.visit(i) for i in e.indices)
        load = e if all(a is b for a, b in zip(indices, e.indices)) else replace(e, indices=indices)
        return self.widen(load) if self.is_narrow(e.dtype) else load

    # -- arithmetic -------------------------------------------------------------------------
    def visit_BinaryOp(self, e: E.BinaryOp) -> E.PrimExpr:
        a, b = self.visit(e.a), self.visit(e.b)
        return e if a is e.a and b is e.b else type(e)(a, b)

    def visit_Select(self, e: E.Select) -> E.PrimExpr:
        c, t, f = self.visit(e.condition), self.visit(e.true_value), self.visit(e.false_value)
        if c is e.condition and t is e.true_value and f is e.false_value:
            return e
        return E.Select(c, t, f)

    def visit_Broadcast(self, e: E.Broadcast) -> E.PrimExpr:
        v = self.visit(e.value)
        return e if v is e.value else E.Broadcast(v, e.lanes)

    def visit_Cast(self, e: E.Cast) -> E.PrimExpr:
        v = self.visit(e.value)
        if self.is_narrow(e.dtype):
            return self.widen(self.narrow_to(e.dtype, v))
        if v is e.value:
            return e
        return v if v.dtype == e.dtype else E.Cast(e.dtype, v)

    def visit_Let(self, e: E.Let) -> E.PrimExpr:
        value, body = self.visit(e.value), self.visit(e.body)
        if self.is_narrow(e.var.dtype):
            value = self.narrow_to(e.var.dtype, value)
        if value is e.value and body is e.body:
            return e
        return E.Let(e.var, value, body)

    def visit_Call(self, e: E.Call) -> E.PrimExpr:
        args = tuple(self.visit(a) for a in e.args)
        if all(a is b for a, b in zip(args, e.args)) and not self.is_narrow(e.dtype):
            return e
        computes = isinstance(e.op, Op) and (
            e.op.get_attr("math") or e.op.name == "tir.if_then_else"
        )
        if computes:
            dtype = self.f32(e.dtype) if self.is_narrow(e.dtype) else e.dtype
            return E.Call(dtype, e.op, args)
        opaque = tuple(
            self.narrow_to(old.dtype, new) if self.is_narrow(old.dtype) else new
            for old, new in zip(e.args, args)
        )
        call = E.Call(e.dtype, e.op, opaque)
        return self.widen(call) if self.is_narrow(e.dtype) else call

    # -- statements -------------------------------------------------------------------------
    def visit_BufferStore(self, s: S.BufferStore) -> S.Stmt:
        value = self.visit(s.value)
        indices = tuple(self.visit(i) for i in s.indices)
        if self.is_narrow(s.buffer.dtype):
            value = self.narrow_to(s.value.dtype, value)
        same = value is s.value and all(a is b for a, b in zip(indices, s.indices))
        return s if same else replace(s, value=value, indices=indices)

    def visit_LetStmt(self, s: S.LetStmt) -> S.Stmt:
        value, body = self.visit(s.value), self.visit(s.body)
        if self.is_narrow(s.var.dtype):
            value = self.narrow_to(s.var.dtype, value)
        if value is s.value and body is s.body:
            return s
        return S.LetStmt(s.var, value, body)
