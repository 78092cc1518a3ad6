"""StaticPlanBlockMemory: intermediate tensors share storage by liveness.

Input: functions after `CallTIRRewrite` (outputs allocated by ``R.builtin.alloc_tensor``).
Within each binding sequence (a function body, an ``If`` branch), an allocation whose tensor
never leaves that sequence becomes a view of a storage block:

    s0 = R.memory.alloc_storage(R.shape([nbytes]), 0, "global", "uint8")
    lv = R.memory.alloc_tensor(s0, 0, R.shape([16, 32]), R.dtype("float32"))

A storage is reused by a later allocation once every tensor placed in it is dead (used by no
later binding). A tensor may alias what it flows into: a variable bound to it, a tuple or a
tuple item holding it, and the result of any call it is passed to other than a call returning
nothing (a kernel's, an external function's), so a packed function returning its argument keeps
it alive. A tensor
that reaches the sequence's result (the function's return value, a branch's value) escapes and
keeps its own allocation. Sizes: a constant request takes the smallest free storage that is big
enough, else grows the largest free one, else opens a new one; a symbolic request reuses a free
storage of the same byte-size expression, else one provably at least as big for every value of
the dims (``seq * 384`` bytes for a request of ``seq * 128``). So a chain of N same-size
intermediates uses 2 storages, not N.

Postcondition: the remaining ``builtin.alloc_tensor`` calls are the escaping tensors;
``Extern=1`` functions (external C) are left as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from kiln.arith import Analyzer, simplify
from kiln.arith.linear import mul_factors
from kiln.ir.function import BaseFunc, GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.op import Op
from kiln.ir.structural import structural_equal
from kiln.ir.transform import PassContext
from kiln.relax.analysis.free_vars import free_vars
from kiln.relax.analysis.primitive import EXTERN
from kiln.relax.analysis.struct_info import tir_vars
from kiln.relax.binding import Binding, VarBinding
from kiln.relax.expr import Call, DataTypeImm, Expr, Function, SeqExpr, ShapeExpr, Var
from kiln.relax.expr_functor import ExprMutator
from kiln.relax.function_pass import FunctionPass
from kiln.relax.op.memory import alloc_storage, alloc_tensor
from kiln.relax.struct_info import INT64, TupleStructInfo
from kiln.tir.expr import IntImm, Mul, PrimExpr
from kiln.tir.expr import Var as TirVar
from kiln.tir.function import PrimFunc

ALLOC = "relax.builtin.alloc_tensor"


def is_alloc(value: Any) -> bool:
    return isinstance(value, Call) and isinstance(value.op, Op) and value.op.name == ALLOC


def nbytes(call: Call) -> PrimExpr:
    """The byte size of the tensor ``builtin.alloc_tensor`` call ``call`` makes."""
    shape, dtype = call.args[0], call.args[1]
    assert isinstance(shape, ShapeExpr) and isinstance(dtype, DataTypeImm)
    size: PrimExpr = IntImm(INT64, dtype.value.itemsize)
    for d in shape.values:
        size = size * d
    return simplify(size)


@dataclass
class Storage:
    """One storage block: its (final) size and the tensors placed in it."""

    index: int
    size: PrimExpr
    dead_after: int = -1  # the last binding that uses a tensor placed here
    first: int = -1  # the id of the first tensor placed here (where the storage is allocated)


@dataclass
class _Liveness:
    """Per binding sequence: which candidate tensors each variable may hold, and their last
    use (binding index); escaping candidates are dropped."""

    mod: IRModule
    holds: dict[int, set[int]] = field(default_factory=dict)
    last_use: dict[int, int] = field(default_factory=dict)
    candidates: dict[int, int] = field(default_factory=dict)  # var id -> binding index

    def tokens_of(self, vars_: list[Var]) -> set[int]:
        out: set[int] = set()
        for v in vars_:
            out |= self.holds.get(id(v), set())
        return out

    def visit(self, i: int, b: Binding) -> None:
        if isinstance(b, VarBinding) and is_alloc(b.value):
            self.candidates[id(b.var)] = i
            self.holds[id(b.var)] = {id(b.var)}
            self.last_use[id(b.var)] = i
            return
        used = self.tokens_of(free_vars(b.value))
        for t in used:
            self.last_use[t] = i
        if not self.is_kernel_call(b.value):
            self.holds[id(b.var)] = used

    def is_kernel_call(self, value: Expr) -> bool:
        """A call writing its outputs in place and returning nothing (a PrimFunc's, or one
        whose value is ``()``: an external function's, a destination-passing packed one's)."""
        if not isinstance(value, Call):
            return False
        sinfo = value.struct_info_
        if isinstance(sinfo, TupleStructInfo) and not sinfo.fields:
            return True
        return isinstance(value.op, GlobalVar) and isinstance(
            self.mod.functions.get(value.op), PrimFunc
        )

    def escape(self, result: Expr) -> None:
        for t in self.tokens_of(free_vars(result)):
            self.candidates.pop(t, None)


def plan(
    bindings: list[Binding], result: Expr, mod: IRModule, entry: frozenset[int] = frozenset()
) -> dict[int, Storage]:
    """Storage of each planned allocation (by the id of its variable)."""
    live = _Liveness(mod)
    for i, b in enumerate(bindings):
        live.visit(i, b)
    live.escape(result)
    free: list[Storage] = []
    busy: list[Storage] = []
    placed: dict[int, Storage] = {}
    opened = 0
    for i, b in enumerate(bindings):
        if id(b.var) not in live.candidates:
            continue
        for s in [s for s in busy if s.dead_after < i]:
            busy.remove(s)
            free.append(s)
        size = nbytes(b.value)  # type: ignore[arg-type]
        s = pick(free, size, entry)
        if s is None:
            s = Storage(opened, size, first=id(b.var))
            opened += 1
        else:
            free.remove(s)
        s.dead_after = live.last_use[id(b.var)]
        busy.append(s)
        placed[id(b.var)] = s
    return placed


def pick(
    free: list[Storage], size: PrimExpr, entry: frozenset[int] = frozenset()
) -> Storage | None:
    """The free storage to reuse for ``size`` bytes (grown if needed), or None. A symbolic
    storage grows only to a product of the dims in ``entry`` (ids of the dims the function's
    parameters define: known where every storage is allocated)."""
    if not isinstance(size, IntImm):
        same = next((s for s in free if structural_equal(s.size, size)), None)
        return (
            same
            or next((s for s in free if _at_least(s.size, size)), None)
            or _grow(free, size, entry)
        )
    consts = [s for s in free if isinstance(s.size, IntImm)]
    fits = [s for s in consts if s.size.value >= size.value]  # type: ignore[union-attr]
    if fits:
        return min(fits, key=lambda s: s.size.value)  # type: ignore[union-attr]
    if not consts:
        return None
    grown = max(consts, key=lambda s: s.size.value)  # type: ignore[union-attr]
    grown.size = size
    return grown


def _grow(free: list[Storage], size: PrimExpr, entry: frozenset[int]) -> Storage | None:
    """A free storage of the same dims' product, grown to ``size``, or None."""
    need = _monomial(size)
    if need is None or not all(id(v) in entry for v in tir_vars(size)):
        return None
    for s in free:
        have = _monomial(s.size)
        if have is not None and have[1] == need[1]:
            s.size = size
            return s
    return None


def _at_least(have: PrimExpr, need: PrimExpr) -> bool:
    """Whether ``have >= need`` for every value of their dims (``seq * 384 >= seq * 128``,
    also ``batch * 4 * seq * 32 >= seq * batch * 64``: products compared as monomials)."""
    a, b = _monomial(have), _monomial(need)
    if a is not None and b is not None and a[1] == b[1]:
        return a[0] >= b[0] >= 0
    return Analyzer().const_int_bound(simplify(have - need)).min_value >= 0


def _monomial(e: PrimExpr) -> tuple[int, tuple[str, ...]] | None:
    """``e`` as (constant, sorted names of its dims) when it is a product of dims and constants
    (a byte size: the dims are never negative), else None."""
    const, names = 1, []
    for f in mul_factors(e):
        if isinstance(f, IntImm):
            const *= f.value
        elif isinstance(f, TirVar):
            names.append(f.name)
        elif isinstance(f, Mul):
            inner = _monomial(f)
            if inner is None:
                return None
            const *= inner[0]
            names += inner[1]
        else:
            return None
    return const, tuple(sorted(names))


class _Planner(ExprMutator):
    def __init__(self, mod: IRModule) -> None:
        super().__init__(mod)
        self.mod = mod
        self.placed: dict[int, Storage] = {}
        self.storage_vars: dict[int, Var] = {}
        self.entry: frozenset[int] = frozenset()  # the dims the function's parameters define

    def visit_with_new_scope(self, body: Expr, params: Any = ()) -> Expr:
        if isinstance(body, SeqExpr):
            bindings = [b for block in body.blocks for b in block.bindings]
            if params:
                self.entry = frozenset(id(v) for p in params for v in tir_vars(p.struct_info_))
            self.placed.update(plan(bindings, body.body, self.mod, self.entry))
        return super().visit_with_new_scope(body, params)

    def visit_var_binding(self, b: VarBinding) -> None:
        s = self.placed.get(id(b.var))
        if s is None:
            super().visit_var_binding(b)
            return
        if s.first == id(b.var):
            storage = alloc_storage(ShapeExpr([s.size]), 0, "global", "uint8")
            self.storage_vars[id(s)] = self.builder.emit(storage, f"storage{s.index}")
        shape, dtype = b.value.args[0], b.value.args[1]  # type: ignore[attr-defined]
        view = alloc_tensor(self.storage_vars[id(s)], 0, shape, dtype)
        self.reemit(b, view)


@dataclass(frozen=True)
class StaticPlanBlockMemory(FunctionPass):
    """Intermediate tensors share storage by liveness (module docstring)."""

    name: ClassVar[str] = "static-plan-block-memory"

    def transform(self, gv: GlobalVar, func: Function, mod: IRModule, ctx: PassContext) -> BaseFunc:
        if func.get_attr(EXTERN):
            return func
        return _Planner(mod).visit(func)
