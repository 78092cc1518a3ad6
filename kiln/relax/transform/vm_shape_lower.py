"""VMShapeLower: symbolic dims live in a shape heap; inputs are checked where they enter.

Each function gets a shape heap (``vm.builtin.alloc_shape_heap``, an int64 tensor with one slot
per symbolic variable and per compound dim expression such as ``n * 2``; None when the function
has no symbolic dims) and, first thing, checks every parameter against its struct info:
``vm.builtin.check_tensor_info`` (kind, rank, dtype), then ``vm.builtin.match_shape`` whose
per-dim codes assert a constant, store a variable met for the first time, or assert a variable
already stored, so every use of a dim in the inputs is checked against the first. Tuples are
checked field by field, shapes with ``check_shape_info`` + ``match_shape``, int prim values with
``match_prim_value``, functions with ``check_func_info``. Error contexts name the function and
parameter, so a bad argument reads ``main: argument x.shape[1] expected 16, got 15``. A
``match_cast`` in the body is checked the same way; the binding stays (it defines symbolic
variables for the rest of the function) and the VM code generators read it as an alias.

Compound dims are computed by a generated shape function (a PrimFunc over the heap buffer,
called like a kernel) as soon as their variables are known; compound dims of the inputs are
then asserted against the computed slots. Every non-constant ``R.shape`` becomes
``vm.builtin.make_shape(heap, ndim, (code, value)...)`` and every non-constant prim value
``vm.builtin.make_prim_value(heap, code, value)``.

Postcondition: every `ShapeExpr` and `PrimValue` left is constant; functions have no nested
functions (run `LambdaLift` first). ``Extern=1`` functions (external C) are left as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from kiln.errors import PassError
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.structural import structural_equal
from kiln.ir.transform import Pass, PassContext
from kiln.relax.analysis.primitive import EXTERN
from kiln.relax.analysis.struct_info import tir_vars
from kiln.relax.binding import BindingBlock, MatchCast
from kiln.relax.expr import (
    Call,
    DataTypeImm,
    Expr,
    ExternFunc,
    Function,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    TupleGetItem,
    Var,
)
from kiln.relax.expr_functor import ExprMutator, ExprVisitor
from kiln.relax.op.vm import call_builtin_with_ctx, null_value
from kiln.relax.struct_info import (
    INT64,
    UNIT,
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from kiln.runtime.vm_builtins import MakeCode, MatchCode, builtin
from kiln.tir import stmt as S
from kiln.tir.buffer import decl_buffer
from kiln.tir.expr import BufferLoad, Cast, IntImm, PrimExpr
from kiln.tir.expr import Var as TirVar
from kiln.tir.function import PrimFunc
from kiln.tir.functor import substitute


def _b(short: str) -> ExternFunc:
    return ExternFunc(builtin(short).name)


ALLOC_HEAP = builtin("alloc_shape_heap").name


def _int(v: int) -> PrimValue:
    return PrimValue(IntImm(INT64, int(v)))


def is_const(e: PrimExpr) -> bool:
    return isinstance(e, IntImm)


def shape_function(exprs: list[tuple[int, PrimExpr]], slots: dict[int, int], size: int) -> PrimFunc:
    """``heap[slot] = expr`` for each pair, the variables of each expr read from their slots."""
    h = TirVar("H", "handle")
    buf = decl_buffer((IntImm(INT64, size),), "int64", "H")
    stores = []
    for slot, e in exprs:
        loads = {v: BufferLoad(buf, (IntImm(INT64, slots[id(v)]),)) for v in tir_vars(e)}
        value = substitute(e, loads)
        value = value if value.dtype == INT64 else Cast(INT64, value)
        stores.append(S.BufferStore(buf, value, (IntImm(INT64, slot),)))
    return PrimFunc((h,), S.seq(*stores), buffer_map={h: buf})


class _Heap:
    """Slots of one function's symbolic variables and compound dims; which hold a value yet."""

    def __init__(self) -> None:
        self.slots: dict[int, int] = {}  # id(tir var) -> slot
        self.exprs: list[tuple[int, PrimExpr]] = []  # compound dims, with their slots
        self.stored: set[int] = set()  # ids of the variables stored so far
        self.computed: set[int] = set()  # slots of the compound dims computed so far

    def add(self, e: PrimExpr) -> None:
        if is_const(e):
            return
        if isinstance(e, TirVar):
            self.slots.setdefault(id(e), self.size)
            return
        for v in tir_vars(e):
            self.add(v)
        if self.find(e) is None:
            self.exprs.append((self.size, e))

    def find(self, e: PrimExpr) -> int | None:
        if isinstance(e, TirVar):
            return self.slots.get(id(e))
        return next((s for s, x in self.exprs if structural_equal(x, e)), None)

    def has_value(self, e: PrimExpr) -> bool:
        if isinstance(e, TirVar):
            return id(e) in self.stored
        return self.find(e) in self.computed

    @property
    def size(self) -> int:
        return len(self.slots) + len(self.exprs)

    def computable(self) -> list[tuple[int, PrimExpr]]:
        """Compound dims not computed yet whose variables are all stored."""
        return [
            (s, e)
            for s, e in self.exprs
            if s not in self.computed and all(id(v) in self.stored for v in tir_vars(e))
        ]


class _Lower(ExprMutator):
    def __init__(self, mod: IRModule, fname: str, heap_slots: _Heap) -> None:
        super().__init__(mod)
        self.fname = fname
        self.h = heap_slots
        self.heap: Expr = null_value()  # replaced by a variable in the prologue
        self.pending: list[tuple[Expr, TensorStructInfo | ShapeStructInfo, str]] = []
        self.made: list[dict[tuple[int, ...], Expr]] = [{}]  # per scope: make_shape results

    # -- emission -----------------------------------------------------------------------------
    def emit_void(self, func: ExternFunc, *args: Expr) -> None:
        self.builder.emit(Call(func, tuple(args), sinfo_args=(UNIT,)), "_")

    def prologue(self, params: tuple[Var, ...]) -> None:
        heap: Expr = null_value()
        if self.h.size:
            sinfo = TensorStructInfo([self.h.size], "int64")
            heap = call_builtin_with_ctx(ALLOC_HEAP, (_int(self.h.size),), sinfo)
        self.heap = self.builder.emit(heap, "shape_heap")
        for p in params:
            self.check(p, p.struct_info, f"{self.fname}: argument {p.name_hint}")
        self.compute_ready()

    def compute_ready(self) -> None:
        """Compute the compound dims that became computable, then check the inputs waiting for
        them."""
        ready = self.h.computable()
        if ready:
            func = shape_function(ready, self.h.slots, self.h.size)
            gv = self.builder.add_func(func, "shape_func")
            self.builder.emit(Call(gv, (self.heap,)), "_")
            self.h.computed.update(s for s, _ in ready)
        waiting, self.pending = self.pending, []
        for value, sinfo, ctx in waiting:
            self.match(value, sinfo, ctx, deferred=True)

    # -- checks ---------------------------------------------------------------------------------
    def check(self, value: Expr, sinfo: StructInfo, ctx: str) -> None:
        if isinstance(sinfo, TensorStructInfo):
            dtype: Expr = null_value() if sinfo.dtype.is_void else DataTypeImm(sinfo.dtype)
            self.emit_void(_b("check_tensor_info"), value, _int(sinfo.ndim), dtype, StringImm(ctx))
            if sinfo.dims is not None:
                self.match(value, sinfo, ctx)
        elif isinstance(sinfo, ShapeStructInfo):
            self.emit_void(_b("check_shape_info"), value, _int(sinfo.ndim), StringImm(ctx))
            if sinfo.values is not None:
                self.match(value, sinfo, ctx)
        elif isinstance(sinfo, TupleStructInfo):
            n = len(sinfo.fields)
            self.emit_void(_b("check_tuple_info"), value, _int(n), StringImm(ctx))
            for i, field in enumerate(sinfo.fields):
                if not isinstance(field, ObjectStructInfo):
                    item = self.builder.emit(TupleGetItem(value, i), f"{ctx_name(value)}_{i}")
                    self.check(item, field, f"{ctx}[{i}]")
        elif isinstance(sinfo, PrimStructInfo) and sinfo.value is not None:
            if sinfo.dtype.is_integer:
                code, v = self.match_code(sinfo.value, deferred=False)
                if code is not MatchCode.NO_OP:
                    args = (value, self.heap, _int(code), _int(v), StringImm(ctx))
                    self.emit_void(_b("match_prim_value"), *args)
        elif isinstance(sinfo, FuncStructInfo):
            self.emit_void(_b("check_func_info"), value, StringImm(ctx))

    def match(self, value: Expr, sinfo: Any, ctx: str, deferred: bool = False) -> None:
        """``match_shape`` of a tensor's or shape's dims (``sinfo``) against the heap. A
        compound dim not computed yet is checked later (``deferred``: only those)."""
        dims = sinfo.dims if isinstance(sinfo, TensorStructInfo) else sinfo.values
        assert dims is not None
        compound = [d for d in dims if not is_const(d) and not isinstance(d, TirVar)]
        if not all(self.h.has_value(d) for d in compound):
            self.pending.append((value, sinfo, ctx))  # checked once they are computed
            if deferred:
                return
        codes = [self.match_code(d, deferred) for d in dims]
        if all(c is MatchCode.NO_OP for c, _ in codes):
            return
        args: list[Expr] = [value, self.heap, _int(len(dims))]
        for code, v in codes:
            args += [_int(code), _int(v)]
        self.emit_void(_b("match_shape"), *args, StringImm(ctx))

    def match_code(self, d: PrimExpr, deferred: bool) -> tuple[MatchCode, int]:
        """What `match_shape` does with dim ``d`` (a deferred match checks compound dims only;
        a compound dim is asserted once computed)."""
        if is_const(d):
            if deferred:
                return MatchCode.NO_OP, 0
            return MatchCode.ASSERT_EQUAL_TO_IMM, d.value  # type: ignore[attr-defined]
        if isinstance(d, TirVar):
            if deferred:
                return MatchCode.NO_OP, 0
            slot = self.h.slots[id(d)]
            if id(d) in self.h.stored:
                return MatchCode.ASSERT_EQUAL_TO_LOAD, slot
            self.h.stored.add(id(d))
            return MatchCode.STORE_TO_HEAP, slot
        if not self.h.has_value(d):
            return MatchCode.NO_OP, 0
        return MatchCode.ASSERT_EQUAL_TO_LOAD, self.h.find(d)  # type: ignore[return-value]

    # -- the body -----------------------------------------------------------------------------
    def visit_match_cast(self, b: MatchCast) -> None:
        value = self.builder.normalize_arg(self.visit(b.value))
        self.check(value, b.struct_info, f"{self.fname}: match_cast of {b.var.name_hint}")
        self.compute_ready()
        # NOTE: the binding stays a match_cast (it defines the symbolic variables the rest of
        # the function uses); checked now, the code generators read it as ``var = value``.
        self.builder.emit_normalized(MatchCast(b.var, value, b.struct_info, b.span))

    def visit_ShapeExpr(self, s: ShapeExpr) -> Expr:
        if all(is_const(d) for d in s.values):
            return s
        codes: list[int] = []
        for d in s.values:
            if is_const(d):
                codes += [MakeCode.USE_IMM, d.value]  # type: ignore[attr-defined]
            else:
                codes += [MakeCode.LOAD_SHAPE, self.slot_of(d)]
        key = tuple(codes)
        for scope in reversed(self.made):  # NOTE: one make_shape per shape and scope
            if key in scope:
                return scope[key]
        args = (self.heap, _int(len(s.values)), *(_int(c) for c in codes))
        made = self.builder.emit(Call(_b("make_shape"), args, sinfo_args=(s.struct_info,)), "shape")
        self.made[-1][key] = made
        return made

    def visit_with_new_scope(self, body: Expr, params: Any = ()) -> Expr:
        self.made.append({})
        try:
            return super().visit_with_new_scope(body, params)
        finally:
            self.made.pop()

    def visit_PrimValue(self, p: PrimValue) -> Expr:
        if is_const(p.value) or not p.value.dtype.is_integer:
            return p
        args = (self.heap, _int(MakeCode.LOAD_SHAPE), _int(self.slot_of(p.value)))
        return Call(_b("make_prim_value"), args, sinfo_args=(PrimStructInfo(INT64),))

    def slot_of(self, e: PrimExpr) -> int:
        slot = self.h.find(e)
        if slot is None or not self.h.has_value(e):
            missing = [v.name for v in tir_vars(e) if id(v) not in self.h.stored]
            raise PassError(
                "VMShapeLower",
                f"{self.fname} uses the symbolic dim {e} before any argument or "
                f"match_cast defines {', '.join(missing) or 'it'}",
            )
        return slot

    def visit_Function(self, f: Function) -> Expr:
        raise PassError(
            "VMShapeLower", f"{self.fname} contains a local function; run LambdaLift first"
        )


def ctx_name(value: Expr) -> str:
    return value.name_hint if isinstance(value, Var) else "item"


class _Uses(ExprVisitor):
    """Struct infos of match_casts, dims of shapes and integer prim values of a body."""

    def __init__(self) -> None:
        super().__init__()
        self.infos: list[StructInfo] = []
        self.used: list[PrimExpr] = []

    def visit_binding(self, b: Any) -> None:
        if isinstance(b, MatchCast):
            self.infos.append(b.struct_info)
        super().visit_binding(b)

    def visit_ShapeExpr(self, s: ShapeExpr) -> None:
        self.used.extend(s.values)

    def visit_PrimValue(self, p: PrimValue) -> None:
        if p.value.dtype.is_integer:
            self.used.append(p.value)


def collect(func: Function) -> _Heap:
    """The heap slots ``func`` needs: its symbolic vars, then compound dims."""
    uses = _Uses()
    uses.visit(func.body)
    infos = [p.struct_info for p in func.params] + uses.infos
    heap = _Heap()
    for sinfo in infos:
        for v in tir_vars(sinfo):
            heap.add(v)
    for d in [d for sinfo in infos for d in dims_of(sinfo)] + uses.used:
        heap.add(d)
    return heap


def dims_of(sinfo: StructInfo) -> list[PrimExpr]:
    if isinstance(sinfo, TensorStructInfo):
        return list(sinfo.dims or ())
    if isinstance(sinfo, ShapeStructInfo):
        return list(sinfo.values or ())
    if isinstance(sinfo, TupleStructInfo):
        return [d for f in sinfo.fields for d in dims_of(f)]
    if isinstance(sinfo, PrimStructInfo) and sinfo.value is not None:
        return [sinfo.value]
    return []


def lower_function(gv: GlobalVar, func: Function, mod: IRModule) -> tuple[Function, IRModule]:
    """``func`` with its prologue (heap, parameter checks) and lowered shapes; the module with
    the shape functions it needs."""
    fname = func.global_symbol or gv.name_hint
    mut = _Lower(mod, fname, collect(func))
    body = func.body if isinstance(func.body, SeqExpr) else SeqExpr((), func.body)
    mut.builder.begin_scope(func.params)
    mut.builder.begin_binding_block()
    mut.prologue(func.params)
    prologue = mut.builder.end_block()
    mut.builder.end_scope()
    blocks = list(body.blocks)
    if prologue is not None:
        if blocks and type(blocks[0]) is BindingBlock:  # one block, as the script prints it
            blocks[0] = BindingBlock(prologue.bindings + blocks[0].bindings)
        else:
            blocks.insert(0, prologue)
    seq = SeqExpr(tuple(blocks), body.body)
    new = mut.visit_with_new_scope(seq, func.params)
    out = replace(func, body=new, struct_info_=None)
    return mut.builder.normalize(out), mut.builder.get()


@dataclass(frozen=True)
class VMShapeLower(Pass):
    """Shape heap, input checks, computed dims (module docstring)."""

    name: ClassVar[str] = "vm-shape-lower"

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        out = mod
        for gv, func in list(mod.items()):
            if isinstance(func, Function) and not func.get_attr(EXTERN):
                new, out = lower_function(gv, func, out)
                out = out.update(gv, new)
        return out
