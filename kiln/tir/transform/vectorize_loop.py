"""VectorizeLoop: vectorized loops annotated ``pragma_explicit_vector`` become vector statements.

The C emitter prints a plain vectorized `For` as a scalar loop under ``#pragma omp simd`` and
leaves the rest to GCC's auto-vectorizer; that is printing, and stays in the emitter. For a
register-blocked kernel that is not enough: whether GCC keeps a small accumulator tile (a
``local`` array) in vector registers then depends on the shape of unrelated loops; measured on a
6x16 float32 matmul tile, the same schedule ran at 90 GFLOP/s for 1023x1023 and 25-40 GFLOP/s
for 1024x1024 because the accumulators were kept in memory.

A loop annotated ``pragma_explicit_vector`` (TE: ``s[T].pragma(axis, "explicit_vector")`` next to
``vectorize``; key `kiln.tir.attrs.EXPLICIT_VECTOR`) is rewritten here into straight-line vector
statements: the loop variable becomes a `Ramp`, unit-stride loads and stores become vector loads
and stores, values that do not depend on the loop are computed once and broadcast, and integer
index arithmetic on ramps is folded (``floordiv(ramp(0, 1, 8), 16)`` is ``0``). Every access to
a small local array then has a constant offset once the enclosing unrolled loops are unrolled,
so GCC's scalar replacement keeps the array in registers. The loop is cut into chunks of the
target's vector width (`Target.vector_bytes`, passed as ``VectorizeLoop(target)``; a function
bound to a target uses that one), so GCC never splits a vector type into narrower pieces; a
remainder that is not a power of two becomes scalar statements. A per-lane condition around one
store becomes an ``IfThenElse`` with a vector condition (the emitter prints a masked store).

Postcondition: no ``For`` carries the annotation with a constant extent and a body the rewriter
can express; the others (a nested loop, a condition or store address that is the same for every
lane, a call other than a math builtin or ``if_then_else``, a narrow float type) stay as they
were, and ``KILN_DEBUG=1`` says which loop and why (`kiln.config.remark`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kiln import config
from kiln.arith import simplify
from kiln.arith.linear import to_linear
from kiln.errors import KilnError
from kiln.ir.dtype import DataType
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.target import Target
from kiln.ir.transform import PassContext
from kiln.ir.visitor import Mutator, pre_order_nodes
from kiln.tir import expr as E
from kiln.tir import stmt as S
from kiln.tir.analysis.device import func_target, is_device_function
from kiln.tir.attrs import EXPLICIT_VECTOR
from kiln.tir.function import PrimFunc, PrimFuncPass
from kiln.tir.functor import substitute


@dataclass(frozen=True)
class VectorizeLoop(PrimFuncPass):
    """Rewrite explicit-vector loops into vector statements (see module docstring)."""

    target: Target | None = None
    name: ClassVar[str] = "vectorize-loop"

    def transform(self, gv: GlobalVar, func: PrimFunc, mod: IRModule, ctx: PassContext) -> PrimFunc:
        width = code_target(func, self.target or Target("c")).vector_bytes
        return func.with_body(_Loops(width, gv.name_hint).visit(func.body))


def code_target(func: PrimFunc, default: Target) -> Target:
    """The target ``func``'s code is generated for: its own (or ``default``), the host of a
    device target for host code."""
    target = func_target(func) or default
    if target.is_host_kind or is_device_function(func):
        return target
    return target.host or Target("c")


class _Loops(Mutator):
    """Rewrites the annotated loops of one function, innermost first."""

    def __init__(self, vector_bytes: int, where: str) -> None:
        super().__init__()
        self.vector_bytes, self.where = vector_bytes, where

    def visit_For(self, s: S.For) -> S.Stmt:
        s = self.generic_visit(s)
        if s.kind != S.ForKind.VECTORIZED or not s.annotations.get(EXPLICIT_VECTOR):
            return s
        try:
            return S.seq(*vectorize_loop(s, self.vector_bytes))
        except Unsupported as e:
            config.remark(
                f"{self.where}: explicit-vector loop {s.loop_var.name!r} stays a scalar "
                f"'omp simd' loop: {e}"
            )
            return s


class Unsupported(Exception):
    """The loop body has something the lane rewriter does not handle."""


def _bcast(x: E.PrimExpr, lanes: int) -> E.PrimExpr:
    return x if x.dtype.lanes == lanes else E.Broadcast(x, lanes)


_RAMP_OPS = (E.Add, E.Sub, E.Mul, E.FloorDiv, E.FloorMod)
_INT_DIVS = (E.Div, E.Mod, E.FloorDiv, E.FloorMod)


class LaneRewriter:
    """Rewrites a loop body with ``var`` running ``start, start + 1, ...`` in ``lanes`` lanes.

    Expressions that do not depend on ``var`` stay scalar; the rest get ``lanes`` lanes.
    """

    def __init__(self, var: E.Var, start: E.PrimExpr, lanes: int) -> None:
        self.lanes = lanes
        self.var, self.start = var, start
        self.vmap: dict[E.Var, E.PrimExpr] = {var: E.Ramp(start, 1, lanes)}

    # -- expressions ------------------------------------------------------------------------
    def expr(self, e: E.PrimExpr) -> E.PrimExpr:
        if isinstance(e, E.Var):
            return self.vmap.get(e, e)
        if isinstance(e, (E.IntImm, E.FloatImm, E.StringImm)):
            return e
        if isinstance(e, E.BinaryOp):
            return self.binary(e)
        if isinstance(e, E.Not):
            a = self.expr(e.a)
            return e if a is e.a else E.Not(a)
        if isinstance(e, E.Cast):
            v = self.expr(e.value)
            if v is e.value:
                return e
            return E.Cast(e.dtype.with_lanes(v.dtype.lanes), v)
        if isinstance(e, E.Select):
            return self.select(e)
        if isinstance(e, E.BufferLoad):
            return self.load(e)
        if isinstance(e, E.Call):
            return self.call(e)
        raise Unsupported(f"it computes a {type(e).__name__}")

    def binary(self, e: E.BinaryOp) -> E.PrimExpr:
        a, b = self.expr(e.a), self.expr(e.b)
        if a is e.a and b is e.b:
            return e
        if a.dtype.lanes == 1 and b.dtype.lanes == 1:
            return type(e)(a, b)
        if isinstance(e, _RAMP_OPS) and a.dtype.is_integer:
            folded = _fold_ramp(e, a, b)
            if folded is not None:
                return folded
        return type(e)(_bcast(a, self.lanes), _bcast(b, self.lanes))

    def select(self, e: E.Select) -> E.PrimExpr:
        parts = [self.expr(x) for x in (e.condition, e.true_value, e.false_value)]
        if all(p.dtype.lanes == 1 for p in parts):
            return E.Select(*parts)
        c, t, f = (_bcast(p, self.lanes) for p in parts)
        return E.Select(c, t, f)

    def load(self, e: E.BufferLoad) -> E.PrimExpr:
        if len(e.indices) != 1:
            raise Unsupported("it has a multi-dimensional load")
        idx = self.expr(e.indices[0])
        return e if idx is e.indices[0] else E.BufferLoad(e.buffer, (idx,))

    def call(self, e: E.Call) -> E.PrimExpr:
        name = getattr(e.op, "name", "")
        if name != "tir.if_then_else" and not e.op.get_attr("math"):
            raise Unsupported(f"it calls {name}")
        args = [self.expr(a) for a in e.args]
        if all(a is b for a, b in zip(args, e.args)):
            return e
        if all(a.dtype.lanes == 1 for a in args):
            return E.Call(e.dtype, e.op, tuple(args))
        if name != "tir.if_then_else":
            vec = tuple(_bcast(a, self.lanes) for a in args)
            return E.Call(e.dtype.with_lanes(self.lanes), e.op, vec)
        c, t, f = args
        t, f = _bcast(t, self.lanes), _bcast(f, self.lanes)
        if c.dtype.lanes == 1:  # one side is evaluated: a C `?:` on vectors
            return E.Call(t.dtype, e.op, (c, t, f))
        if _has_load(t) or _has_load(f):  # per-lane choice would read every lane's operands
            raise Unsupported("if_then_else with a per-lane condition around a load")
        return E.Select(c, t, f)

    # -- statements -------------------------------------------------------------------------
    def stmt(self, s: S.Stmt) -> S.Stmt:
        if isinstance(s, S.BufferStore):
            if len(s.indices) != 1:
                raise Unsupported("it has a multi-dimensional store")
            idx = self.expr(s.indices[0])
            if idx.dtype.lanes == 1:
                raise Unsupported("every lane stores to the same address")
            value = _bcast(self.expr(s.value), self.lanes)
            return S.BufferStore(s.buffer, value, (idx,))
        if isinstance(s, S.SeqStmt):
            return S.SeqStmt(tuple(self.stmt(x) for x in s.seq))
        if isinstance(s, S.IfThenElse):
            cond = self.expr(s.condition)
            if cond.dtype.lanes != 1:
                return self.masked_store(s, cond)
            other = self.stmt(s.else_case) if s.else_case is not None else None
            return S.IfThenElse(cond, self.stmt(s.then_case), other)
        if isinstance(s, S.LetStmt):
            value = self.expr(s.value)
            var = s.var
            if value.dtype.lanes != 1:
                var = E.Var(s.var.name, value.dtype)
                self.vmap[s.var] = var
            return S.LetStmt(var, value, self.stmt(s.body))
        if isinstance(s, S.DeclBuffer):
            return S.DeclBuffer(s.buffer, self.stmt(s.body))
        raise Unsupported(f"its body has a {type(s).__name__} statement")

    def masked_store(self, s: S.IfThenElse, cond: E.PrimExpr) -> S.Stmt:
        """``if (lane condition) store``: emitted as a masked store (`CodeGenC.masked_store`),
        which computes every lane but reads arguments and stores only for active lanes."""
        store = s.then_case
        if s.else_case is not None or not isinstance(store, S.BufferStore):
            raise Unsupported("a per-lane condition around something other than one store")
        new = self.stmt(store)
        assert isinstance(new, S.BufferStore)
        for n in pre_order_nodes(new.value):
            # NOTE: an inactive lane may divide by a masked load's 0: a trap for integers.
            if isinstance(n, _INT_DIVS) and n.dtype.is_integer and n.b.dtype.lanes > 1:
                raise Unsupported("integer division by a per-lane value under a per-lane guard")
        every = self.every_lane(s.condition)
        decided = None if every is None else E.as_const_int(every)
        if every is None or decided == 0:
            return S.IfThenElse(cond, new)
        if decided:
            return new
        # NOTE: a tail guard (``ramp < bound``) holds for every lane of all vectors but the
        # last: those take the plain vector store, the last one the masked store.
        return S.IfThenElse(every, new, S.IfThenElse(cond, new))

    def every_lane(self, cond: E.PrimExpr) -> E.PrimExpr | None:
        """A scalar condition that holds exactly when the lane condition ``cond`` (scalar, in
        the loop variable) holds in every lane: for ``f(v) < x`` / ``f(v) <= x`` with ``f``
        rising in ``v`` (a positive coefficient) and ``x`` free of it, the last lane decides;
        conjunctions of such. None for any other condition (or one free of ``v``)."""
        if isinstance(cond, E.And):
            a, b = self.every_lane(cond.a), self.every_lane(cond.b)
            return None if a is None or b is None else E.And(a, b)
        if not isinstance(cond, (E.LT, E.LE)) or _uses(cond.b, self.var):
            return None
        rising = to_linear(cond.a)
        coeff = next((c for atom, c in rising.items() if atom is self.var), 0)
        others = [atom for atom, _ in rising.items() if atom is not self.var]
        if coeff <= 0 or any(_uses(atom, self.var) for atom in others):
            return None
        last = self.start + E.IntImm(self.start.dtype, self.lanes - 1)
        return simplify(substitute(cond, {self.var: last}))


def _uses(e: E.PrimExpr, var: E.Var) -> bool:
    return any(n is var for n in pre_order_nodes(e))


def _arith(op: type, a: E.PrimExpr, b: E.PrimExpr) -> E.PrimExpr:
    """``op(a, b)`` on scalar integers, simplified (constants folded, ``+ 0`` dropped)."""
    return simplify(op(a, b))


def _has_load(e: E.PrimExpr) -> bool:
    return any(isinstance(n, E.BufferLoad) for n in pre_order_nodes(e))


def _fold_ramp(e: E.BinaryOp, a: E.PrimExpr, b: E.PrimExpr) -> E.PrimExpr | None:
    """Integer arithmetic on a ramp that is again a ramp (or a scalar), else None."""
    ra, rb = isinstance(a, E.Ramp), isinstance(b, E.Ramp)
    if isinstance(e, (E.Add, E.Sub)):
        op = E.Add if isinstance(e, E.Add) else E.Sub
        if ra and rb:
            return E.Ramp(_arith(op, a.base, b.base), _arith(op, a.stride, b.stride), a.lanes)
        if ra and b.dtype.lanes == 1:
            return E.Ramp(_arith(op, a.base, b), a.stride, a.lanes)
        if rb and a.dtype.lanes == 1:
            stride = b.stride if op is E.Add else _arith(E.Sub, E.IntImm(b.dtype, 0), b.stride)
            return E.Ramp(_arith(op, a, b.base), stride, b.lanes)
        return None
    if isinstance(e, E.Mul):
        if ra and b.dtype.lanes == 1:
            return E.Ramp(_arith(E.Mul, a.base, b), _arith(E.Mul, a.stride, b), a.lanes)
        if rb and a.dtype.lanes == 1:
            return E.Ramp(_arith(E.Mul, b.base, a), _arith(E.Mul, b.stride, a), b.lanes)
        return None
    if ra and b.dtype.lanes == 1:
        return _fold_floor(e, a, b)
    return None


def _fold_floor(e: E.BinaryOp, a: E.Ramp, b: E.PrimExpr) -> E.PrimExpr | None:
    """``ramp // c`` or ``ramp % c`` for a constant ramp that stays in one block of ``c``."""
    base, stride, c = E.as_const_int(a.base), E.as_const_int(a.stride), E.as_const_int(b)
    if base is None or stride is None or c is None or c <= 0 or stride < 0:
        return None
    values = [base + k * stride for k in range(a.lanes)]
    if len({v // c for v in values}) != 1:
        return None
    if isinstance(e, E.FloorDiv):
        return E.IntImm(a.dtype.element_of(), base // c)
    return E.Ramp(E.IntImm(a.base.dtype, base % c), a.stride, a.lanes)


def _elem_bytes(body: S.Stmt) -> int | None:
    """The widest element (in bytes) the body loads or stores (masks count as 4 bytes); None
    when the body uses a type GCC vectors cannot hold (float16, bfloat16, float8)."""
    widest = 1
    for n in pre_order_nodes(body):
        dt = getattr(n, "dtype", None)
        if isinstance(dt, DataType) and dt.is_float and dt.bits < 32:
            return None
        if isinstance(n, (S.BufferStore, E.BufferLoad)):
            widest = max(widest, 4 if n.buffer.dtype.is_bool else n.buffer.dtype.itemsize)
    return widest


def _chunks(extent: int, lanes: int) -> list[tuple[int, int]]:
    """(first lane, lanes) pieces: full vectors, then powers of two, then single lanes."""
    out: list[tuple[int, int]] = []
    start = 0
    while start < extent:
        n = min(lanes, extent - start)
        n = 1 << (n.bit_length() - 1)
        out.append((start, n))
        start += n
    return out


def vectorize_loop(loop: S.For, vector_bytes: int) -> list[S.Stmt]:
    """The statements replacing ``loop`` (a vectorized loop of constant extent); raises
    `Unsupported` naming what cannot be written with vectors."""
    extent = E.as_const_int(loop.extent)
    if extent is None or extent < 1:
        raise Unsupported(f"extent {loop.extent} is not a positive constant")
    elem = _elem_bytes(loop.body)
    if elem is None:
        raise Unsupported("it uses a float type narrower than 32 bits")
    lanes = max(1, vector_bytes // elem)
    out: list[S.Stmt] = []
    try:
        for first, n in _chunks(extent, lanes):
            start = _arith(E.Add, loop.min, E.IntImm(loop.loop_var.dtype, first))
            if n == 1:
                out.append(substitute(loop.body, {loop.loop_var: start}))
            else:
                out.append(LaneRewriter(loop.loop_var, start, n).stmt(loop.body))
    except KilnError as e:  # e.g. mixed dtypes: the default loop handles them
        raise Unsupported(str(e)) from e
    return out
