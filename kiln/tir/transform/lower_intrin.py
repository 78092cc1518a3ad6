"""LowerIntrin: math builtins and floor division become what the emitters print directly.

Postconditions, per function (host C code, or CUDA device code, as the codegen will split it):

- a math builtin ``tir.<name>(x)`` (`kiln.tir.builtin.MATH_OPS`) is a ``call_pure_extern`` of
  the C function its record names for the argument's width (``expf`` / ``exp``); floats narrower
  than 32 bits are widened to float32 around the call and narrowed back. On CUDA with the
  target's ``fast_math`` a float32 call uses the record's hardware intrinsic (``__expf``).
- ``pow(x, k)`` with a constant exponent k of 1, 2, 3 or 4 is ``x``, ``x * x``, ``x * x * x``,
  ``(x * x) * (x * x)`` (GPT-2's GELU: ``pow(x, 3)`` was a libm call per element);
- ``rsqrt(x)`` is ``1 / sqrt(x)`` (CUDA float32: ``rsqrtf``); ``sigmoid(x)`` is
  ``1 / (1 + exp(-x))``.
- on a CPU, inside a vectorized loop or on a vector value, float32 ``exp``, ``log``, ``tanh``,
  ``erf`` and ``sigmoid`` become the vectorizable arithmetic of `kiln.tir.math_approx` (a libm
  call would keep the C compiler from vectorizing the loop); scalar code keeps libm.
- the same rewriting applies to the shape expressions of an exposed function's entry plan
  (``kiln.packed_api``), which the host emitter prints as the entry's checks;
- integer ``floordiv`` / ``floormod`` are C's truncating ``/`` and ``%``, corrected by a select
  where the signs may differ; when the dividend is provably non-negative and the divisor a
  positive constant, they are plain ``/`` and ``%`` (loop ranges and integer lets give the
  bounds, through `kiln.arith`). Unsigned ones are always plain. Float ``floordiv`` is
  ``floor(a / b)``, float ``floormod`` is ``a - floor(a / b) * b``, float ``%`` is ``fmod``.
- in host code, an integer division whose divisor `kiln.arith` cannot prove non-zero is guarded:
  an ``AssertStmt`` before the statement (moved out of loops where the divisor is invariant)
  raises ``ValueError`` instead of the trap C's division by zero is
  (`kiln.tir.analysis.zero_division`); a divisor that is the constant 0 is a `PassError`.
- in host and device code, ``tir.assert_in_range(v, lo, hi, what)`` (the index checks of the
  gather operators) becomes ``v`` with an ``AssertStmt`` raising ``KernelIndexError`` with the
  index and the range before the statement, moved out of loops the same way; checks
  `kiln.arith` proves are dropped.

``min`` / ``max`` and the bitwise builtins stay: every C-like target prints them directly.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from kiln.arith import Analyzer
from kiln.errors import PassError
from kiln.ir.dtype import DataType
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.op import Op
from kiln.ir.target import Target
from kiln.ir.transform import PassContext
from kiln.ir.visitor import Mutator
from kiln.tir import expr as E
from kiln.tir import op as tir_op
from kiln.tir import stmt as S
from kiln.tir.analysis.device import func_target, is_device_function
from kiln.tir.analysis.zero_division import guard_value, place_guards
from kiln.tir.attrs import PACKED_API
from kiln.tir.builtin import MATH_OPS, MathOp
from kiln.tir.function import PrimFunc, PrimFuncPass
from kiln.tir.math_approx import APPROXIMATIONS
from kiln.tir.packed_api import PackedAPI

F32 = DataType("float", 32)


@dataclass(frozen=True)
class LowerIntrin(PrimFuncPass):
    """Lower math builtins and floor division for ``target`` (see module docstring).

    A function bound to a target (attribute ``target``) is lowered for that target instead; CUDA
    fast math is on when the function's target or ``target`` asks for it."""

    target: Target | None = None
    name: ClassVar[str] = "lower-intrin"

    def transform(self, gv: GlobalVar, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        device = self.is_device(func)
        targets = [t for t in (func_target(func), self.target) if t is not None]
        fast = device and any(t.kind == "cuda" and t.get("fast_math") for t in targets)
        api = func.get_attr(PACKED_API)
        dims = api.dim_bounds if isinstance(api, PackedAPI) else {}
        lower = _Lower(cuda=device, fast_math=bool(fast), where=gv.name_hint, dims=dims)
        body = place_guards(func.body, gv.name_hint, self.name, divisions=not device, dims=dims)
        out = func.with_body(lower.visit(body))
        if api is not None:  # the entry's shape checks are printed as C too
            checks = tuple(
                replace(c, value=lower.visit(guard_value(c.value, gv.name_hint, self.name, dims)))
                for c in api.checks
            )
            if any(a is not b for a, b in zip(checks, api.checks)):
                out = out.with_attr(PACKED_API, replace(api, checks=checks))
        return out

    def is_device(self, func: PrimFunc) -> bool:
        """True when ``func`` becomes device (CUDA) code rather than host C."""
        if func_target(func) is None:
            default = self.target or Target("c")
            return not default.is_host_kind and func.get_attr(PACKED_API) is None
        return is_device_function(func)


class _Lower(Mutator):
    """The rewriting of one function body (see module docstring)."""

    def __init__(self, cuda: bool, fast_math: bool, where: str, dims: dict) -> None:
        super().__init__()
        self.cuda, self.fast_math, self.where = cuda, fast_math, where
        self.an = Analyzer(dims)
        self.vector_loops = 0

    # -- context: loop ranges, vectorized loops ----------------------------------------------
    def visit_For(self, s: S.For) -> S.Stmt:
        with self._scope(s.loop_var, (s.min, s.extent)):
            vec = s.kind == S.ForKind.VECTORIZED
            self.vector_loops += vec
            try:
                return self.generic_visit(s)
            finally:
                self.vector_loops -= vec

    def visit_LetStmt(self, s: S.LetStmt) -> S.Stmt:
        if not s.var.dtype.is_integer or s.var.dtype.lanes != 1:
            return self.generic_visit(s)
        with self._scope(s.var, self.an.const_int_bound(s.value)):
            return self.generic_visit(s)

    @contextmanager
    def _scope(self, var: E.Var, rng: Any) -> Iterator[None]:
        if not var.dtype.is_integer:
            yield
            return
        with self.an.bound_scope(var, rng):
            yield

    # -- math ----------------------------------------------------------------------------------
    def visit_Call(self, e: E.Call) -> E.PrimExpr:
        e = self.generic_visit(e)
        m = e.op.get_attr("math") if isinstance(e.op, Op) else None
        return self.math(e, m) if isinstance(m, MathOp) else e

    def math(self, e: E.Call, m: MathOp) -> E.PrimExpr:
        name = e.op.name[4:]  # type: ignore[union-attr]
        x = e.args[0]
        elem = x.dtype.element_of()
        if not elem.is_float:
            raise PassError(
                LowerIntrin.name,
                f"{self.where}: {name} needs float arguments, got {x.dtype}; cast first",
                e,
            )
        if elem.bits < 32:  # float16 & co.: computed in float32
            wide = tuple(E.Cast(F32.with_lanes(a.dtype.lanes), a) for a in e.args)
            if not e.dtype.is_float:  # isnan & co. return bool
                return self.math(E.Call(e.dtype, e.op, wide), m)
            inner = self.math(E.Call(F32.with_lanes(e.dtype.lanes), e.op, wide), m)
            return E.Cast(e.dtype, inner)
        power = _small_power(e) if name == "pow" else None
        if power is not None:
            return power
        if self.vectorizable(name, x):
            return APPROXIMATIONS[name](x)
        symbol = self.symbol(m, name, elem, e.dtype.lanes)
        if symbol:
            return tir_op.call_pure_extern(e.dtype, symbol, *e.args)
        one = E.FloatImm(elem, 1.0)
        one = one if x.dtype.lanes == 1 else E.Broadcast(one, x.dtype.lanes)
        if name == "rsqrt":
            return one / self.math(_call("sqrt", x), MATH_OPS["sqrt"])
        if name == "sigmoid":
            negated = self.math(_call("exp", (one - one) - x), MATH_OPS["exp"])
            return one / (one + negated)
        raise PassError(LowerIntrin.name, f"{self.where}: no lowering for {name}", e)

    def vectorizable(self, name: str, x: E.PrimExpr) -> bool:
        """True where the float32 approximation replaces libm (see module docstring)."""
        if self.cuda or name not in APPROXIMATIONS or x.dtype.element_of() != F32:
            return False
        return self.vector_loops > 0 or x.dtype.lanes > 1

    def symbol(self, m: MathOp, name: str, elem: DataType, lanes: int) -> str:
        """The C function computing ``name`` for ``elem`` arguments ('' when none does)."""
        if self.cuda and elem.bits == 32:
            if self.fast_math and m.cuda_fast:
                return m.cuda_fast
            if m.cuda_f32 and lanes == 1:
                return m.cuda_f32
        return m.symbol(elem.bits)

    # -- division ------------------------------------------------------------------------------
    def visit_FloorDiv(self, e: E.FloorDiv) -> E.PrimExpr:
        e = self.generic_visit(e)
        if e.dtype.is_float:
            return self.float_floor(E.Div(e.a, e.b))
        if e.dtype.is_uint or self.non_negative(e.a, e.b):
            return E.Div(e.a, e.b)
        return _signed_floor(e.a, e.b, divide=True)

    def visit_FloorMod(self, e: E.FloorMod) -> E.PrimExpr:
        e = self.generic_visit(e)
        if e.dtype.is_float:
            return _bind(e.a, lambda a: _bind(e.b, lambda b: a - self.float_floor(a / b) * b))
        if e.dtype.is_uint or self.non_negative(e.a, e.b):
            return E.Mod(e.a, e.b)
        return _signed_floor(e.a, e.b, divide=False)

    def visit_Mod(self, e: E.Mod) -> E.PrimExpr:
        e = self.generic_visit(e)
        if not e.dtype.is_float:
            return e
        return self.math(E.Call(e.dtype, Op.get("tir.fmod"), (e.a, e.b)), MATH_OPS["fmod"])

    def float_floor(self, v: E.PrimExpr) -> E.PrimExpr:
        return self.math(_call("floor", v), MATH_OPS["floor"])

    def non_negative(self, a: E.PrimExpr, b: E.PrimExpr) -> bool:
        """True when ``a >= 0`` and ``b >= 0`` provably (scalars only), where C's ``/`` and
        ``%`` are floor division and modulo. NOTE: ``b == 0`` is no exception: a division by a
        divisor that may be 0 is guarded before it runs (`place_guards`), and is undefined in
        C either way."""
        if a.dtype.lanes != 1 or b.dtype.lanes != 1:
            return False
        return self.an.const_int_bound(b).min_value >= 0 and self.sum_non_negative(a)

    def sum_non_negative(self, e: E.PrimExpr) -> bool:
        """``e >= 0`` term by term: sums, products, minima and maxima, floor divisions and
        modulos of non-negative parts (a product of two shape variables has no constant bound
        below the int64 limit, but is never negative where the index arithmetic is defined)."""
        if isinstance(e, (E.Add, E.Mul, E.Min, E.Max, E.FloorDiv, E.FloorMod, E.Div, E.Mod)):
            return self.sum_non_negative(e.a) and self.sum_non_negative(e.b)
        return self.an.const_int_bound(e).min_value >= 0


def _small_power(e: E.Call) -> E.PrimExpr | None:
    """``pow(x, k)`` for a constant k in 1..4 as multiplications (None for other exponents)."""
    k = e.args[1]
    k = k.value if isinstance(k, E.Broadcast) else k
    if not isinstance(k, E.FloatImm) or k.value not in (1.0, 2.0, 3.0, 4.0):
        return None

    def chain(x: E.PrimExpr) -> E.PrimExpr:
        if k.value == 4.0:
            return _bind(x * x, lambda sq: sq * sq)
        out = x
        for _ in range(int(k.value) - 1):
            out = out * x
        return out

    return _bind(e.args[0], chain)


def _call(name: str, x: E.PrimExpr) -> E.Call:
    return E.Call(x.dtype, Op.get(f"tir.{name}"), (x,))


def _bind(value: E.PrimExpr, body: Any) -> E.PrimExpr:
    """``let v = value in body(v)``; variables and constants are used as they are."""
    if isinstance(value, (E.Var, E.IntImm, E.FloatImm)):
        return body(value)
    v = E.Var("v", value.dtype)
    return E.Let(v, value, body(v))


def _signed_floor(a: E.PrimExpr, b: E.PrimExpr, divide: bool) -> E.PrimExpr:
    """Floor division (``divide``) or modulo of signed integers from C's truncating ones: the
    truncated quotient is one too big (the remainder one divisor off) exactly when the
    remainder is non-zero and its sign differs from the divisor's."""

    def build(a: E.PrimExpr, b: E.PrimExpr) -> E.PrimExpr:
        zero = _zero(a)
        r = E.Mod(a, b)
        if isinstance(b, E.IntImm):  # the divisor's sign is known
            off = E.LT(r, zero) if b.value > 0 else E.LT(zero, r)
        else:
            off = E.And(E.NE(r, zero), E.NE(E.LT(r, zero), E.LT(b, zero)))
        if divide:
            q = E.Div(a, b)
            return E.Select(off, q - _one(a), q)
        return E.Select(off, r + b, r)

    return _bind(a, lambda av: _bind(b, lambda bv: build(av, bv)))


def _zero(like: E.PrimExpr) -> E.PrimExpr:
    z = E.IntImm(like.dtype.element_of(), 0)
    return z if like.dtype.lanes == 1 else E.Broadcast(z, like.dtype.lanes)


def _one(like: E.PrimExpr) -> E.PrimExpr:
    o = E.IntImm(like.dtype.element_of(), 1)
    return o if like.dtype.lanes == 1 else E.Broadcast(o, like.dtype.lanes)
