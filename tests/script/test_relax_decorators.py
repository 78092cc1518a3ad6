"""The R decorators: standalone functions, options, modules mixing T and R functions, deferred
parsing in plain classes, and the structure the parser builds."""

from __future__ import annotations

import numpy as np

import kiln.script
from kiln import relax, tir
from kiln.ir import IRModule, assert_structural_equal
from kiln.relax import op
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T


def test_standalone_function_and_options() -> None:
    @R.function
    def f(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        y = R.exp(x)
        return y

    @R.function(private=True, pure=False)
    def g(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        R.call_packed("log", x, sinfo_args=(R.Tuple()))
        return x

    assert isinstance(f, relax.Function) and f.global_symbol == "f" and f.is_pure
    assert g.global_symbol is None and not g.is_pure
    assert "@R.function(private=True, pure=False)" in g.script()


def test_the_parser_builds_what_the_block_builder_builds() -> None:
    @R.function
    def parsed(x: R.Tensor(("n", 4), "float32"), y: R.Tensor((4,), "float32")):
        with R.dataflow():
            lv = R.add(x, y)
            gv = R.nn.relu(lv)
            R.output(gv)
        return gv

    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 4], "float32"))
    y = relax.Var("y", relax.TensorStructInfo([4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("parsed", [x, y]):
        with bb.dataflow():
            lv = bb.emit(op.add(x, y))
            gv = bb.emit_output(op.nn.relu(lv))
        bb.emit_func_output(gv)
    assert_structural_equal(parsed, bb.get()["parsed"])


def test_mixed_module_and_tvm_style_entry_point() -> None:
    @kiln.script.ir_module
    class Module:
        @T.prim_func
        def kernel(a: T.Buffer((3,), "float32"), b: T.Buffer((3,), "float32")):
            for i in range(3):
                b[i] = a[i] * T.float32(2)

        @R.function
        def main(x: R.Tensor((3,), "float32")) -> R.Tensor((3,), "float32"):
            cls = Module
            y = R.call_tir(cls.kernel, (x,), out_sinfo=R.Tensor((3,), "float32"))
            return y

    assert isinstance(Module, IRModule) and sorted(g.name_hint for g in Module) == [
        "kernel",
        "main",
    ]
    again = kiln.script.from_source(Module.script())
    assert_structural_equal(Module, again)
    lib = kiln.build(IRModule({"kernel": Module["kernel"]}), target="c")
    a, b = np.arange(3, dtype="float32"), np.zeros(3, dtype="float32")
    lib["kernel"](a, b)
    assert b.tolist() == [0.0, 2.0, 4.0]


def test_function_in_a_plain_class_is_parsed_on_access() -> None:
    class Holder:
        @R.function
        def f(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
            return x

    assert isinstance(Holder.f, relax.Function)
    assert Holder.f is Holder.f


def test_module_level_symbolic_declaration_and_closure_values() -> None:
    scale = 3

    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
            c = R.const(scale * 1.0, "float32")
            y = R.multiply(x, c)
            return y

    f = Module["main"]
    const = f.body.blocks[0].bindings[0].value
    assert float(const.data) == 3.0
