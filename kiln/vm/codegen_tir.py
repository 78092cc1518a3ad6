"""Compiled-mode VM codegen: each graph-level function becomes ``__vmtir__<name>(ctx_ptr, r, c,
f)``, a PrimFunc over the register, constant and function any-lists.

Registers (`Registers`): parameters 0..n-1, the result n, then one per value in program order.
A value is ``anylist_getitem(r, i)`` (a register), ``anylist_getitem(c, i)`` (a constant: tensor,
shape, string, dtype), ``anylist_getitem(f, i)`` (a function-table entry used as a value) or a
plain TIR expression (a prim value; ``reinterpret("handle", 0)`` for None). A call with a result
is ``anylist_setitem_call_packed(r, dst, "name", args...)``; one whose value is ``()`` is the
statement ``call_packed("name", args...)``. Kernels of the module are called directly,
``anylist_setitem_call_cpacked`` / ``call_cpacked`` with their symbol and a trailing null
resource handle (TVM's convention; the C code generator drops it); other graph functions and
closures through ``vm.builtin.invoke_closure(ctx_ptr, function, args...)``; builtins taking the
context with ``ctx_ptr`` first. A kernel called through ``vm.builtin.call_tir_dyn`` with a
shape ``make_shape`` built from the heap is called directly too, its dims read from the heap
(``anylist_heap_load``); a ``make_shape`` nothing else reads is not emitted. ``If`` reads its
condition with ``vm.builtin.read_if_cond`` and both branches copy their value into one merge
register; the result is copied into register n.

The C code generator prints these calls in the form of the runtime's any-list contract
(`kiln.runtime.vm_anylist`), and the PrimFuncs go through the ordinary TIR pipeline with the
kernels, into the same library.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kiln.errors import CodegenError
from kiln.ir.dtype import DataType
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.op import Op
from kiln.relax.analysis.free_vars import use_counts
from kiln.relax.expr import (
    Call,
    Constant,
    DataTypeImm,
    Expr,
    ExternFunc,
    Function,
    If,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
)
from kiln.runtime.vm_builtins import MakeCode, builtin, takes_ctx
from kiln.runtime.vm_format import VMTIR_PREFIX, DTypeConst, FuncKind, ShapeConst
from kiln.tir import stmt as S
from kiln.tir.expr import Call as TirCall
from kiln.tir.expr import Cast, IntImm, PrimExpr
from kiln.tir.expr import StringImm as TirString
from kiln.tir.expr import Var as TirVar
from kiln.tir.function import PrimFunc
from kiln.vm.exec_builder import ExecBuilder
from kiln.vm.functions import callee_of, is_vm_function, is_void, table_entry, vm_function_name
from kiln.vm.registers import Registers

COPY = builtin("copy").name
CALL_TIR_DYN = builtin("call_tir_dyn").name
ALLOC_STORAGE = builtin("alloc_storage").name
MAKE_SHAPE = builtin("make_shape").name
MAKE_TUPLE = builtin("make_tuple").name
TUPLE_GETITEM = builtin("tuple_getitem").name
INVOKE_CLOSURE = builtin("invoke_closure").name
READ_IF_COND = builtin("read_if_cond").name

EMITS = (COPY, MAKE_TUPLE, TUPLE_GETITEM, INVOKE_CLOSURE, READ_IF_COND)
"""The builtins this code generator calls by itself (the passes add the others)."""

HANDLE = DataType.parse("handle")
I32 = DataType.parse("int32")
I64 = DataType.parse("int64")


def tir_call(dtype: DataType, name: str, *args: PrimExpr) -> TirCall:
    return TirCall(dtype, Op.get(f"tir.{name}"), tuple(args))


def i32(v: int) -> IntImm:
    return IntImm(I32, v)


def null_handle(bits_dtype: str = "int64") -> TirCall:
    """``reinterpret("handle", 0)``: None."""
    return tir_call(HANDLE, "reinterpret", IntImm(DataType.parse(bits_dtype), 0))


class FunctionCodegen:
    """Translate one graph-level function (see the module docstring)."""

    def __init__(self, mod: IRModule, builder: ExecBuilder, gv: GlobalVar, func: Function) -> None:
        self.mod, self.builder, self.gv, self.func = mod, builder, gv, func
        self.ctx = TirVar("ctx_ptr", HANDLE)
        self.r, self.c, self.f = TirVar("r", HANDLE), TirVar("c", HANDLE), TirVar("f", HANDLE)
        self.regs = Registers(len(func.params), result_register=True)
        self.values: dict[int, PrimExpr | None] = {}
        self.stack: list[list[S.Stmt]] = []
        self.shapes: dict[int, Call] = {}
        """``make_shape`` calls by the id of their variable (see `direct_dyn_call`)."""
        self.skipped: set[int] = set()
        """Variables of ``make_shape`` calls only direct kernel calls read: never made."""

    def generate(self) -> PrimFunc:
        name = vm_function_name(self.gv, self.func)
        self.builder.declare(name, FuncKind.VMTIR)
        for i, p in enumerate(self.func.params):
            self.values[id(p)] = self.get(self.r, self.regs.param(i))
        body = self.scope(lambda: self.copy(self.visit(self.func.body), self.regs.result))
        params = tuple(p.name_hint for p in self.func.params)
        self.builder.define(name, FuncKind.VMTIR, params, self.regs.count)
        attrs = {"global_symbol": VMTIR_PREFIX + name}
        return PrimFunc((self.ctx, self.r, self.c, self.f), body, attrs=attrs)

    # -- emission ---------------------------------------------------------------------------------
    def scope(self, fill: Callable[[], None]) -> S.Stmt:
        self.stack.append([])
        fill()
        return S.seq(*self.stack.pop())

    def emit(self, stmt: S.Stmt) -> None:
        self.stack[-1].append(stmt)

    def get(self, lst: TirVar, i: int) -> TirCall:
        return tir_call(HANDLE, "anylist_getitem", lst, i32(i))

    def reg(self, dst: int | None) -> PrimExpr | None:
        return None if dst is None else self.get(self.r, dst)

    def packed(self, name: str, args: list[PrimExpr], dst: int | None) -> None:
        if dst is None:
            call = tir_call(I32, "tvm_call_packed", TirString(name), *args)
        else:
            call = tir_call(
                I32, "anylist_setitem_call_packed", self.r, i32(dst), TirString(name), *args
            )
        self.emit(S.Evaluate(call))

    def cpacked(self, symbol: str, args: list[PrimExpr], dst: int | None) -> None:
        items = (TirString(symbol), *args, null_handle("uint64"))
        if dst is None:
            call = tir_call(I32, "call_cpacked", *items)
        else:
            call = tir_call(I32, "anylist_setitem_call_cpacked", self.r, i32(dst), *items)
        self.emit(S.Evaluate(call))

    def copy(self, value: PrimExpr | None, dst: int) -> None:
        if value is not None:
            self.packed(COPY, [value], dst)

    def arg(self, e: Expr) -> PrimExpr:
        value = self.visit(e)
        return null_handle() if value is None else value

    # -- expressions ------------------------------------------------------------------------------
    def visit(self, e: Any) -> PrimExpr | None:
        method = getattr(self, f"visit_{type(e).__name__}", None)
        if method is None:
            raise CodegenError(f"VM codegen: cannot translate {type(e).__name__} ({e!r})")
        return method(e)

    def visit_SeqExpr(self, s: SeqExpr) -> PrimExpr | None:
        self.find_direct_shapes(s)
        for block in s.blocks:
            for b in block.bindings:
                if id(b.var) in self.skipped:
                    continue
                # a match_cast was checked by VMShapeLower: here it only names its value
                self.values[id(b.var)] = self.visit(b.value)
        return self.visit(s.body)

    def find_direct_shapes(self, s: SeqExpr) -> None:
        """Record the ``make_shape`` bindings of ``s``; those only kernel calls through
        ``call_tir_dyn`` read (`direct_dyn_call`) are skipped."""
        direct: dict[int, int] = {}
        for block in s.blocks:
            for b in block.bindings:
                v = b.value
                if _is_call_of(v, MAKE_SHAPE):
                    self.shapes[id(b.var)] = v
                elif _is_call_of(v, CALL_TIR_DYN) and self.direct_ok(v):
                    direct[id(v.args[-1])] = direct.get(id(v.args[-1]), 0) + 1
                elif self.storage_size(v) is not None:
                    key = id(self.storage_size(v))
                    direct[key] = direct.get(key, 0) + 1
        uses = use_counts(s)
        self.skipped |= {k for k, n in direct.items() if uses.get(k) == n}

    def direct_ok(self, call: Call) -> bool:
        shape = call.args[-1]
        kernel = call.args[0]
        return (
            isinstance(shape, Var)
            and id(shape) in self.shapes
            and isinstance(kernel, GlobalVar)
            and callee_of(self.mod, kernel).kind == "kernel"
        )

    def storage_size(self, e: Any) -> Var | None:
        """The size of ``vm.builtin.alloc_storage(ctx, size, ...)`` when it is a one-dim
        ``make_shape`` from the heap (passed as an int instead, `visit_op_call`)."""
        if not (isinstance(e, Call) and isinstance(e.op, Op)):
            return None
        if e.op.name != "relax.call_builtin_with_ctx":
            return None
        func, args = e.args
        if not (isinstance(func, ExternFunc) and func.global_symbol == ALLOC_STORAGE):
            return None
        size = args.fields[0] if isinstance(args, Tuple) and args.fields else None
        if not (isinstance(size, Var) and id(size) in self.shapes):
            return None
        ndim = self.shapes[id(size)].args[1]
        return size if ndim.value.value == 1 else None  # type: ignore[attr-defined]

    def shape_ints(self, shape: Var) -> list[PrimExpr]:
        """The dims of the ``make_shape`` bound to ``shape``: immediates and heap reads."""
        heap, _, *codes = self.shapes[id(shape)].args
        ints: list[PrimExpr] = []
        for code, value in zip(codes[::2], codes[1::2]):
            v = value.value.value  # type: ignore[attr-defined]
            if code.value.value == MakeCode.USE_IMM:  # type: ignore[attr-defined]
                ints.append(IntImm(I64, v))
            else:
                ints.append(tir_call(I64, "anylist_heap_load", self.arg(heap), IntImm(I64, v)))
        return ints

    def direct_dyn_call(self, call: Call) -> None:
        """``call_tir_dyn(kernel, args..., shape)`` of a kernel of the module, ``shape`` made by
        ``make_shape`` from the heap: the kernel called directly, its dims read from the heap
        (no shape object, no builtin between). NOTE: 12 of a dynamic GPT-2's 80 builtin calls
        per inference were such shapes."""
        kernel, *args, shape = call.args
        ints = self.shape_ints(shape)
        callee = callee_of(self.mod, kernel)
        self.cpacked(callee.name, [*(self.arg(a) for a in args), *ints], None)

    def visit_Call(self, call: Call) -> PrimExpr | None:
        op = call.op
        if isinstance(op, Op):
            return self.visit_op_call(call, op)
        if _is_call_of(call, CALL_TIR_DYN) and self.direct_ok(call):
            self.direct_dyn_call(call)
            return None
        dst = None if is_void(call) else self.regs.new()
        args = [self.arg(a) for a in call.args]
        callee = callee_of(self.mod, op)
        if callee.kind == "packed":
            self.packed(callee.name, [self.ctx, *args] if takes_ctx(callee.name) else args, dst)
        elif callee.kind == "kernel":
            self.cpacked(callee.name, args, dst)
        else:
            self.packed(INVOKE_CLOSURE, [self.ctx, self.arg(op), *args], dst)
        return self.reg(dst)

    def visit_op_call(self, call: Call, op: Op) -> PrimExpr | None:
        if op.name == "relax.null_value":
            return null_handle()
        if op.name != "relax.call_builtin_with_ctx":
            raise CodegenError(
                f"VM codegen: {op.name} is not VM form; run the VM lowering passes "
                "(default_relax_pipeline in kiln/driver/pipeline.py) first"
            )
        dst = None if is_void(call) else self.regs.new()
        func, args = call.args
        assert isinstance(func, ExternFunc) and isinstance(args, Tuple)  # the op's infer
        size = self.storage_size(call)  # NOTE: 7 of a dynamic GPT-2's 13 make_shape calls
        if size is not None:
            values = [self.shape_ints(size)[0], *(self.arg(a) for a in args.fields[1:])]
        else:
            values = [self.arg(a) for a in args.fields]
        self.packed(func.global_symbol, [self.ctx, *values], dst)
        return self.reg(dst)

    def visit_If(self, e: If) -> PrimExpr | None:
        merge = self.regs.new()
        cond = self.arg(e.cond)
        test = Cast(
            DataType.parse("bool"), tir_call(I32, "tvm_call_packed", TirString(READ_IF_COND), cond)
        )
        then = self.scope(lambda: self.packed(COPY, [self.arg(e.true_branch)], merge))
        other = self.scope(lambda: self.packed(COPY, [self.arg(e.false_branch)], merge))
        self.emit(S.IfThenElse(test, then, other))
        return self.reg(merge)

    def visit_Var(self, v: Var) -> PrimExpr | None:
        if id(v) not in self.values:
            raise CodegenError(f"VM codegen: variable {v.name_hint!r} is used before it is defined")
        return self.values[id(v)]

    visit_DataflowVar = visit_Var

    def visit_Constant(self, c: Constant) -> PrimExpr:
        return self.get(self.c, self.builder.constant(c.data))

    def visit_ShapeExpr(self, s: ShapeExpr) -> PrimExpr:
        if not all(isinstance(d, IntImm) for d in s.values):
            raise CodegenError(f"VM codegen: symbolic shape {s}; run VMShapeLower first")
        dims = tuple(d.value for d in s.values)  # type: ignore[attr-defined]
        return self.get(self.c, self.builder.constant(ShapeConst(dims)))

    def visit_PrimValue(self, p: PrimValue) -> PrimExpr:
        return p.value

    def visit_StringImm(self, s: StringImm) -> PrimExpr:
        return self.get(self.c, self.builder.constant(s.value))

    def visit_DataTypeImm(self, d: DataTypeImm) -> PrimExpr:
        return self.get(self.c, self.builder.constant(DTypeConst(str(d.value))))

    def visit_Tuple(self, t: Tuple) -> PrimExpr | None:
        fields = [self.arg(x) for x in t.fields]
        dst = self.regs.new()
        self.packed(MAKE_TUPLE, fields, dst)
        return self.reg(dst)

    def visit_TupleGetItem(self, t: TupleGetItem) -> PrimExpr | None:
        tup = self.arg(t.tuple_value)
        dst = self.regs.new()
        self.packed(TUPLE_GETITEM, [tup, IntImm(I64, t.index)], dst)
        return self.reg(dst)

    def visit_GlobalVar(self, gv: GlobalVar) -> PrimExpr:
        name, kind = table_entry(self.mod, gv, FuncKind.VMTIR)
        return self.get(self.f, self.builder.declare(name, kind))

    def visit_ExternFunc(self, e: ExternFunc) -> PrimExpr:
        name, kind = table_entry(self.mod, e, FuncKind.VMTIR)
        return self.get(self.f, self.builder.declare(name, kind))

    def visit_Function(self, f: Function) -> PrimExpr:
        raise CodegenError("VM codegen: a local function is left; run LambdaLift first")


def _is_call_of(e: Any, name: str) -> bool:
    return isinstance(e, Call) and isinstance(e.op, ExternFunc) and e.op.global_symbol == name


def codegen_tir(mod: IRModule, builder: ExecBuilder) -> IRModule:
    """``mod`` with each graph-level function replaced by its ``__vmtir__`` PrimFunc (declared
    in ``builder``'s function table as a compiled VM function)."""
    funcs: dict[GlobalVar, Any] = {}
    for gv, func in mod.items():
        if is_vm_function(func):
            prim = FunctionCodegen(mod, builder, gv, func).generate()  # type: ignore[arg-type]
            funcs[GlobalVar(prim.global_symbol or "")] = prim
        elif not isinstance(func, Function):  # an Extern=1 function: its C is in external_mods
            funcs[gv] = func
    return IRModule(funcs, mod.attrs)
