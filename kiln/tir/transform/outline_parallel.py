"""OutlineParallelLoops: the body of a parallel loop becomes a private no-alias function.

Why: in a ``tir.noalias`` function the C emitter declares the data pointers ``restrict``, so GCC
vectorizes a loop reading one buffer and writing another without versioning it for aliasing.
GCC drops ``restrict`` from the variables an OpenMP region captures (the outlined region reads
them from a shared struct), so the inner loops of a ``#pragma omp parallel for`` lost it and were
versioned or left scalar. A ``restrict`` parameter of a called function survives inlining, so
the loop body moves into a function whose pointer parameters are ``restrict``, and GCC inlines
it back into the parallel region. The C emitter runs a loop outlined this way on kiln's thread
pool (`kiln.codegen.c_parallel`: a range function calls the outlined body; GCC inlines it there).

For every host function with ``tir.noalias``, each outermost ``parallel`` loop whose body cannot
raise (no assert, no call of another module function or packed function, no heap allocation:
see `_may_raise`) and uses no vector-typed or pointer-valued ``let`` variable from outside becomes

    for i in T.parallel(n):
        <name>_par<k>(<the body's free variables, i included>)

where ``<name>_par<k>`` is a new private PrimFunc with ``tir.noalias`` and ``kiln.no_error``
(its callers need not check for an error; the C emitter refuses to emit an error exit in it).
A parallel body that can raise stays inline: its errors need the loop's error slot.

The free pointer variables are the function's parameters or allocations made outside the loop,
distinct memory, so ``restrict`` on all of them holds.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.names import NameSupply
from kiln.ir.op import Op
from kiln.ir.transform import Pass, PassContext
from kiln.ir.visitor import Mutator, pre_order_nodes
from kiln.tir import expr as E
from kiln.tir import stmt as S
from kiln.tir.analysis import Rebind, free_vars
from kiln.tir.analysis.device import is_device_function
from kiln.tir.attrs import NO_ERROR, NOALIAS, STACK_ALLOC_BYTES
from kiln.tir.function import PrimFunc
from kiln.tir.type import PointerType

_RAISING_OPS = frozenset(
    f"tir.{n}"
    for n in (
        "call_packed",
        "call_cpacked",
        "call_packed_lowered",
        "call_cpacked_lowered",
        "tvm_call_packed",
        "tvm_throw_last_error",
        "launch_kernel",
        "ret",
        "vm_call_packed",
        "anylist_setitem_call_packed",
        "anylist_setitem_call_cpacked",
    )
)
"""Builtins whose C code may raise (or leave the function)."""


@dataclass(frozen=True)
class OutlineParallelLoops(Pass):
    """Move parallel loop bodies into private ``restrict`` functions (see module docstring)."""

    name: ClassVar[str] = "outline-parallel-loops"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        names = NameSupply(gv.name_hint for gv in mod.functions)
        changed: dict[GlobalVar, PrimFunc] = {}
        for gv, func in mod.items():
            if not isinstance(func, PrimFunc) or is_device_function(func):
                continue
            if not func.get_attr(NOALIAS, False):
                continue
            outliner = _Outliner(gv.name_hint, mod, names)
            body = outliner.visit(func.body)
            if outliner.helpers:
                changed[gv] = func.with_body(body)
                changed.update(outliner.helpers)
        return mod.update_all(changed) if changed else mod


class _Outliner(Mutator):
    """Outlines the outermost parallel loops of one function body."""

    def __init__(self, name: str, mod: IRModule, names: NameSupply) -> None:
        super().__init__()
        self.name, self.mod, self.names = name, mod, names
        self.lets: set[E.Var] = set()
        self.helpers: dict[GlobalVar, PrimFunc] = {}

    def visit_LetStmt(self, s: S.LetStmt) -> S.Stmt:
        self.lets.add(s.var)
        return self.generic_visit(s)

    def visit_For(self, s: S.For) -> S.Stmt:
        if s.kind != S.ForKind.PARALLEL:
            return self.generic_visit(s)
        params = [s.loop_var, *(v for v in free_vars(s.body) if v is not s.loop_var)]
        if _may_raise(s.body, self.mod) or any(self.unsafe(v) for v in params):
            return s
        gv = GlobalVar(self.names.fresh(f"{self.name}_par"))
        fresh = [replace(v) for v in params]
        body = Rebind(dict(zip(params, fresh))).visit(s.body)
        attrs = {NOALIAS: True, NO_ERROR: True}
        self.helpers[gv] = PrimFunc(tuple(fresh), body, attrs=attrs)
        call = S.Evaluate(E.Call(E.INT32, gv, tuple(params)))
        return S.For(s.loop_var, s.min, s.extent, s.kind, call, s.thread_binding, s.annotations)

    def unsafe(self, v: E.Var) -> bool:
        """A vector, or a pointer bound by ``let`` (it may point into another buffer)."""
        pointer = isinstance(v.type_annotation, PointerType) or v.dtype.is_handle
        return v.dtype.lanes > 1 or (pointer and v in self.lets)


def _may_raise(body: S.Stmt, mod: IRModule) -> bool:
    """True when the C code of ``body`` may raise an error (or return from the function)."""
    return any(_raises(n, mod) for n in pre_order_nodes(body))


def _raises(n: Any, mod: IRModule) -> bool:
    if isinstance(n, S.AssertStmt):
        return True
    if isinstance(n, S.Allocate):
        count = E.const_product(n.extents)
        return count is None or count * n.dtype.itemsize > STACK_ALLOC_BYTES
    if not isinstance(n, E.Call):
        return False
    if isinstance(n.op, GlobalVar):
        callee = mod.functions.get(n.op)
        return not (isinstance(callee, PrimFunc) and callee.get_attr(NO_ERROR, False))
    return isinstance(n.op, Op) and n.op.name in _RAISING_OPS
