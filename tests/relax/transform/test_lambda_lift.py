"""LambdaLift: local functions become private module functions; captured variables become
leading parameters and the binding a make_closure; a function capturing nothing is called
directly; a recursive local function is refused by name."""

# ruff: noqa: F821, F841 - names in R scripts are script variables, not Python names

from __future__ import annotations

import pytest

from kiln import relax
from kiln.errors import PassError
from kiln.relax import Call, ExternFunc, Function
from kiln.relax.analysis import verify_module
from kiln.relax.transform import LambdaLift
from kiln.script import ir as I
from kiln.script import relax as R


@I.ir_module
class Nested:
    @R.function
    def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")):
        @R.function
        def add_y(z: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            s = R.add(z, y)
            return s

        @R.function
        def double(z: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            s = R.add(z, z)
            return s

        a = add_y(x)
        b = double(a)
        return b


def test_local_functions_are_lifted() -> None:
    out = LambdaLift()(Nested)
    verify_module(out)
    assert sorted(gv.name_hint for gv in out.functions) == ["main", "main_add_y", "main_double"]
    add_y, double = out["main_add_y"], out["main_double"]
    assert [p.name_hint for p in add_y.params] == ["y", "z"]  # captured first
    assert [p.name_hint for p in double.params] == ["z"]
    assert add_y.global_symbol is None and double.global_symbol is None
    main = out["main"]
    values = {b.var.name_hint: b.value for blk in main.body.blocks for b in blk.bindings}
    closure = values["add_y"]
    assert isinstance(closure, Call) and isinstance(closure.op, ExternFunc)
    assert closure.op.global_symbol == "vm.builtin.make_closure"
    assert [getattr(a, "name_hint", None) for a in closure.args] == ["main_add_y", "y"]
    assert isinstance(values["a"].op, relax.Var)  # called as a closure
    assert values["b"].op.name_hint == "main_double"  # called directly
    assert not any(isinstance(v, Function) for v in values.values())


def test_a_module_without_local_functions_is_unchanged() -> None:
    @I.ir_module
    class Flat:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            return x

    assert LambdaLift()(Flat) is Flat


def test_recursion_is_refused_by_name() -> None:
    x = relax.Var("x", relax.TensorStructInfo([4], "float32"))
    f = relax.Var("f", relax.FuncStructInfo([relax.TensorStructInfo([4], "float32")]))
    z = relax.Var("z", relax.TensorStructInfo([4], "float32"))
    inner = relax.Function((z,), relax.SeqExpr((), Call(f, (z,))))
    body = relax.SeqExpr((relax.BindingBlock((relax.VarBinding(f, inner),)),), x)
    mod = (
        relax.BlockBuilder()
        .get()
        .update("main", relax.Function((x,), body).with_attr("global_symbol", "main"))
    )
    with pytest.raises(PassError, match="local function 'f' of main calls itself"):
        LambdaLift()(mod)
