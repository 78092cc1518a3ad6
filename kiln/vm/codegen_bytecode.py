"""Bytecode VM codegen: each graph-level function becomes instructions of the runtime's format
(`kiln.runtime.vm_format`: Call, Ret, Goto, If).

Registers as in compiled mode (`Registers`, without the result register): parameters 0..n-1,
then one per value. A value is an argument (`Arg`): a register, a constant (tensor, shape,
string, dtype, float), an immediate (an int or bool prim value), a function-table entry, or None.
Every callee is a function-table entry: packed functions and builtins (``PACKED``), kernels of
the module (``KERNEL``), graph functions (``BYTECODE``, called directly); a closure in a
register goes through ``vm.builtin.invoke_closure``. ``If`` reads its condition into a register
with ``vm.builtin.read_if_cond``, jumps over the true branch when it is false, and both branches
copy their value into one merge register. ``Ret`` returns a register (a value that is not in one
is copied into one first).
"""

from __future__ import annotations

from typing import Any

from kiln.errors import CodegenError
from kiln.ir.function import GlobalVar
from kiln.ir.module import IRModule
from kiln.ir.op import Op
from kiln.relax.expr import (
    Call,
    Constant,
    DataTypeImm,
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
from kiln.runtime.vm_builtins import builtin, takes_ctx
from kiln.runtime.vm_format import (
    CONTEXT,
    NONE_ARG,
    VOID_REGISTER,
    Arg,
    ArgKind,
    DTypeConst,
    FuncKind,
    Goto,
    Ret,
    ShapeConst,
)
from kiln.runtime.vm_format import Call as VMCall
from kiln.runtime.vm_format import If as VMIf
from kiln.tir.expr import FloatImm, IntImm
from kiln.vm.exec_builder import ExecBuilder
from kiln.vm.functions import callee_of, is_vm_function, is_void, table_entry, vm_function_name
from kiln.vm.registers import Registers

COPY = builtin("copy").name
MAKE_TUPLE = builtin("make_tuple").name
TUPLE_GETITEM = builtin("tuple_getitem").name
INVOKE_CLOSURE = builtin("invoke_closure").name
READ_IF_COND = builtin("read_if_cond").name

EMITS = (COPY, MAKE_TUPLE, TUPLE_GETITEM, INVOKE_CLOSURE, READ_IF_COND)
"""The builtins this code generator calls by itself (the passes add the others)."""


class FunctionCodegen:
    """Translate one graph-level function (see the module docstring)."""

    def __init__(self, mod: IRModule, builder: ExecBuilder, gv: GlobalVar, func: Function) -> None:
        self.mod, self.builder, self.gv, self.func = mod, builder, gv, func
        self.regs = Registers(len(func.params), result_register=False)
        self.values: dict[int, Arg] = {}

    def generate(self) -> None:
        name = vm_function_name(self.gv, self.func)
        self.builder.declare(name, FuncKind.BYTECODE)
        for i, p in enumerate(self.func.params):
            self.values[id(p)] = Arg.reg(self.regs.param(i))
        start = self.builder.pc
        result = self.visit(self.func.body)
        self.builder.emit(Ret(self.in_register(result)))
        params = tuple(p.name_hint for p in self.func.params)
        self.builder.define(
            name, FuncKind.BYTECODE, params, self.regs.count, start, self.builder.pc
        )

    # -- emission ---------------------------------------------------------------------------------
    def call(self, name: str, kind: FuncKind, args: list[Arg], dst: int | None) -> Arg:
        func = self.builder.declare(name, kind)
        self.builder.emit(VMCall(VOID_REGISTER if dst is None else dst, func, tuple(args)))
        return NONE_ARG if dst is None else Arg.reg(dst)

    def builtin(self, name: str, args: list[Arg], dst: int | None) -> Arg:
        return self.call(name, FuncKind.PACKED, args, dst)

    def in_register(self, value: Arg) -> int:
        if value.kind is ArgKind.REGISTER and value.value >= 0:
            return value.value
        dst = self.regs.new()
        self.builtin(COPY, [value], dst)
        return dst

    # -- expressions ------------------------------------------------------------------------------
    def visit(self, e: Any) -> Arg:
        method = getattr(self, f"visit_{type(e).__name__}", None)
        if method is None:
            raise CodegenError(f"VM codegen: cannot translate {type(e).__name__} ({e!r})")
        return method(e)

    def visit_SeqExpr(self, s: SeqExpr) -> Arg:
        for block in s.blocks:
            for b in block.bindings:
                # a match_cast was checked by VMShapeLower: here it only names its value
                self.values[id(b.var)] = self.visit(b.value)
        return self.visit(s.body)

    def visit_Call(self, call: Call) -> Arg:
        op = call.op
        if isinstance(op, Op):
            return self.visit_op_call(call, op)
        dst = None if is_void(call) else self.regs.new()
        args = [self.visit(a) for a in call.args]
        callee = callee_of(self.mod, op)
        if callee.kind == "closure":
            return self.builtin(INVOKE_CLOSURE, [CONTEXT, self.visit(op), *args], dst)
        if callee.kind == "packed" and takes_ctx(callee.name):
            args = [CONTEXT, *args]
        kinds = {"packed": FuncKind.PACKED, "kernel": FuncKind.KERNEL, "vm": FuncKind.BYTECODE}
        return self.call(callee.name, kinds[callee.kind], args, dst)

    def visit_op_call(self, call: Call, op: Op) -> Arg:
        if op.name == "relax.null_value":
            return NONE_ARG
        if op.name != "relax.call_builtin_with_ctx":
            raise CodegenError(
                f"VM codegen: {op.name} is not VM form; run the VM lowering passes "
                "(default_relax_pipeline in kiln/driver/pipeline.py) first"
            )
        dst = None if is_void(call) else self.regs.new()
        func, args = call.args
        assert isinstance(func, ExternFunc) and isinstance(args, Tuple)  # the op's infer
        items = [CONTEXT, *(self.visit(a) for a in args.fields)]
        return self.builtin(func.global_symbol, items, dst)

    def visit_If(self, e: If) -> Arg:
        merge = self.regs.new()
        cond = self.regs.new()
        self.builtin(READ_IF_COND, [self.visit(e.cond)], cond)
        branch = self.builder.emit(VMIf(cond, 0))
        self.builtin(COPY, [self.visit(e.true_branch)], merge)
        jump = self.builder.emit(Goto(0))
        self.builder.patch(branch, VMIf(cond, self.builder.pc - branch))
        self.builtin(COPY, [self.visit(e.false_branch)], merge)
        self.builder.patch(jump, Goto(self.builder.pc - jump))
        return Arg.reg(merge)

    def visit_Var(self, v: Var) -> Arg:
        if id(v) not in self.values:
            raise CodegenError(f"VM codegen: variable {v.name_hint!r} is used before it is defined")
        return self.values[id(v)]

    visit_DataflowVar = visit_Var

    def visit_Constant(self, c: Constant) -> Arg:
        return Arg.const(self.builder.constant(c.data))

    def visit_ShapeExpr(self, s: ShapeExpr) -> Arg:
        if not all(isinstance(d, IntImm) for d in s.values):
            raise CodegenError(f"VM codegen: symbolic shape {s}; run VMShapeLower first")
        dims = tuple(d.value for d in s.values)  # type: ignore[attr-defined]
        return Arg.const(self.builder.constant(ShapeConst(dims)))

    def visit_PrimValue(self, p: PrimValue) -> Arg:
        v = p.value
        if isinstance(v, IntImm):
            return Arg.imm(int(v.value))
        if isinstance(v, FloatImm):
            return Arg.const(self.builder.constant(float(v.value)))
        raise CodegenError(f"VM codegen: symbolic prim value {p}; run VMShapeLower first")

    def visit_StringImm(self, s: StringImm) -> Arg:
        return Arg.const(self.builder.constant(s.value))

    def visit_DataTypeImm(self, d: DataTypeImm) -> Arg:
        return Arg.const(self.builder.constant(DTypeConst(str(d.value))))

    def visit_Tuple(self, t: Tuple) -> Arg:
        fields = [self.visit(x) for x in t.fields]
        return self.builtin(MAKE_TUPLE, fields, self.regs.new())

    def visit_TupleGetItem(self, t: TupleGetItem) -> Arg:
        tup = self.visit(t.tuple_value)
        return self.builtin(TUPLE_GETITEM, [tup, Arg.imm(t.index)], self.regs.new())

    def visit_GlobalVar(self, gv: GlobalVar) -> Arg:
        name, kind = table_entry(self.mod, gv, FuncKind.BYTECODE)
        return Arg.func(self.builder.declare(name, kind))

    def visit_ExternFunc(self, e: ExternFunc) -> Arg:
        name, kind = table_entry(self.mod, e, FuncKind.BYTECODE)
        return Arg.func(self.builder.declare(name, kind))

    def visit_Function(self, f: Function) -> Arg:
        raise CodegenError("VM codegen: a local function is left; run LambdaLift first")


def codegen_bytecode(mod: IRModule, builder: ExecBuilder) -> IRModule:
    """Bytecode of every graph-level function of ``mod`` into ``builder``; returns the rest of
    the module (the kernels, built into the library)."""
    rest: dict[GlobalVar, Any] = {}
    for gv, func in mod.items():
        if is_vm_function(func):
            FunctionCodegen(mod, builder, gv, func).generate()  # type: ignore[arg-type]
        elif not isinstance(func, Function):  # an Extern=1 function: its C is in external_mods
            rest[gv] = func
    return IRModule(rest, mod.attrs)
