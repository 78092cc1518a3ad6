"""Bytecode VM codegen: registers as in compiled mode (parameters first, one per value), every
callee a function-table entry, If as a conditional jump over the true branch plus a Goto over
the false one, Ret of a register; graph functions call each other directly."""

# ruff: noqa: F821, F841 - names in R scripts are script variables, not Python names

from __future__ import annotations

from kiln.runtime.vm_format import CONTEXT, Arg, Call, FuncKind, Goto, If, Ret
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.vm import ExecBuilder, vm_codegen


@I.ir_module
class Branch:
    @R.function
    def ife(cond: R.Tensor((), "bool"), x: R.Tensor) -> R.Tensor:
        R.func_attr({"global_symbol": "ife"})
        if cond:
            w = R.call_packed("test.vm.add", x, x, sinfo_args=(R.Tensor))
        else:
            w = R.call_packed("test.vm.mul", x, x, sinfo_args=(R.Tensor))
        return w


def test_if_jumps_over_the_branch_not_taken() -> None:
    b = ExecBuilder()
    rest = vm_codegen(Branch, "bytecode", b)
    assert list(rest.functions) == []  # no kernels: nothing to build
    f = {e.name: i for i, e in enumerate(b.functions)}
    reg = Arg.reg
    assert b.instructions == [
        Call(3, f["vm.builtin.read_if_cond"], (reg(0),)),  # 2: merge, 3: the condition
        If(3, 4),
        Call(4, f["test.vm.add"], (reg(1), reg(1))),
        Call(2, f["vm.builtin.copy"], (reg(4),)),
        Goto(3),
        Call(5, f["test.vm.mul"], (reg(1), reg(1))),
        Call(2, f["vm.builtin.copy"], (reg(5),)),
        Ret(2),
    ]
    ife = b.functions[f["ife"]]
    assert (ife.kind, ife.params, ife.num_registers, ife.start, ife.end) == (
        FuncKind.BYTECODE,
        ("cond", "x"),
        6,
        0,
        8,
    )
    assert all(b.functions[i].kind is FuncKind.PACKED for n, i in f.items() if n != "ife")


@I.ir_module
class TwoFunctions:
    @R.function
    def helper(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        return x

    @R.function
    def main(x: R.Tensor((2,), "float32")):
        cls = TwoFunctions
        y = cls.helper(x)
        k = R.call_builtin_with_ctx("vm.builtin.alloc_shape_heap", (R.prim_value(3),))
        return (y, R.const(1.5, "float32"), R.prim_value(7), R.str("s"))


def test_direct_calls_context_arguments_and_constants() -> None:
    b = ExecBuilder()
    vm_codegen(TwoFunctions, "bytecode", b)
    f = {e.name: i for i, e in enumerate(b.functions)}
    main = b.functions[f["main"]]
    code = b.instructions[main.start : main.end]
    assert code[0] == Call(1, f["helper"], (Arg.reg(0),))
    assert code[1] == Call(2, f["vm.builtin.alloc_shape_heap"], (CONTEXT, Arg.imm(3)))
    const_15, const_s = b.constants.index(b.constants[code[2].args[1].value]), code[2].args[3]
    assert code[2].func == f["vm.builtin.make_tuple"]
    assert code[2].args[2] == Arg.imm(7)
    assert float(b.constants[const_15]) == 1.5 and b.constants[const_s.value] == "s"
    assert code[3] == Ret(3)
    assert b.functions[f["helper"]].kind is FuncKind.BYTECODE
