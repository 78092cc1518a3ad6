"""The relax well-formedness verifier, and KILN_DEBUG=1 running it after every pass."""

from __future__ import annotations

import pytest

from kiln import relax, tir
from kiln.errors import VerifyError
from kiln.ir import GlobalVar, IRModule, PassContext
from kiln.relax import op as R
from kiln.relax.analysis.well_formed import verify_module, well_formed, well_formed_errors
from kiln.relax.function_pass import FunctionPass, debug_pass_context
from kiln.script import ir as I
from kiln.script import relax as RS
from kiln.script import tir as T


def t(shape=(4,)):
    return relax.TensorStructInfo(list(shape), "float32")


def func(params, blocks, body, name="main"):
    """A module of one hand-built (not normalized) function."""
    f = relax.Function(params, relax.SeqExpr(tuple(blocks), body), None)
    return IRModule({GlobalVar(name): f})


def call(op_builder, *args):
    c = op_builder(*args)
    return relax.BlockBuilder().normalize(c)


def test_a_well_formed_module_passes() -> None:
    @I.ir_module
    class Module:
        @T.prim_func(private=True)
        def k(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):
            for i in range(4):
                b[i] = a[i]

        @RS.function
        def main(x: RS.Tensor((4,), "float32")) -> RS.Tensor((4,), "float32"):
            cls = Module
            with RS.dataflow():
                y = RS.call_tir(cls.k, (x,), out_sinfo=RS.Tensor((4,), "float32"))
                RS.output(y)
            return y

    assert well_formed(Module)
    verify_module(Module)


def test_use_before_definition_and_double_definition() -> None:
    x = relax.Var("x", t())
    y = relax.Var("y", t())
    bind = relax.VarBinding(y, call(R.exp, x))
    mod = func([x], [relax.BindingBlock([bind, bind])], y)
    errors = well_formed_errors(mod)
    assert any("'y' is defined more than once" in e for e in errors), errors
    z = relax.Var("z", t())
    mod = func([x], [], z)
    assert any("'z' is used out of scope" in e for e in well_formed_errors(mod))


def test_dataflow_vars_stay_in_their_block() -> None:
    x = relax.Var("x", t())
    lv = relax.DataflowVar("lv", t())
    block = relax.DataflowBlock([relax.VarBinding(lv, call(R.exp, x))])
    errors = well_formed_errors(func([x], [block], lv))
    assert any("'lv' is used outside its dataflow block" in e for e in errors), errors
    outside = relax.BindingBlock([relax.VarBinding(lv, call(R.exp, x))])
    errors = well_formed_errors(func([x], [outside], x))
    assert any("bound outside a dataflow block" in e for e in errors), errors


def test_symbolic_vars_must_be_defined() -> None:
    n = tir.Var("n", "int64")
    x = relax.Var("x", t())
    y = relax.Var("y", relax.TensorStructInfo([n], "float32"))
    cast = relax.VarBinding(y, call(R.exp, x))
    errors = well_formed_errors(func([x], [relax.BindingBlock([cast])], y))
    assert any("symbolic variable 'n'" in e for e in errors), errors


def test_impure_calls_are_not_allowed_in_dataflow_blocks() -> None:
    x = relax.Var("x", t())
    lv = relax.Var("lv", t())
    c = call(R.call_packed, "effect", x)
    block = relax.DataflowBlock([relax.VarBinding(lv, c)])
    assert any("impure call" in e for e in well_formed_errors(func([x], [block], lv)))


def test_call_arguments_must_be_leaves() -> None:
    x = relax.Var("x", t())
    inner = call(R.exp, x)
    outer = relax.Call(R.exp(x).op, (inner,))
    object.__setattr__(outer, "struct_info_", t())
    y = relax.Var("y", t())
    mod = func([x], [relax.BindingBlock([relax.VarBinding(y, outer)])], y)
    assert any("is not a leaf" in e for e in well_formed_errors(mod))


def test_call_tir_must_match_the_prim_func() -> None:
    @I.ir_module(check_well_formed=False)
    class Module:
        @T.prim_func(private=True)
        def k(a: T.Buffer((4,), "float32"), b: T.Buffer((3,), "int32")):
            b[0] = T.Cast("int32", a[0])

        @RS.function
        def main(x: RS.Tensor((4,), "float32")):
            cls = Module
            y = RS.call_tir(cls.k, (x,), out_sinfo=RS.Tensor((4,), "float32"))
            z = RS.call_tir(cls.k, (x, x), out_sinfo=RS.Tensor((3,), "int32"))
            return (y, z)

    errors = well_formed_errors(Module)
    assert any("has dtype float32 but the PrimFunc writes int32" in e for e in errors), errors
    assert any("extent 4 on axis 0, the PrimFunc's buffer 3" in e for e in errors), errors
    assert any("passes 2 input(s), 1 output(s)" in e for e in errors), errors


def test_debug_level_verifies_after_each_pass_and_names_the_pass() -> None:
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Breaks(FunctionPass):
        name = "breaks-things"

        def transform(self, gv, f, mod, ctx):
            ghost = relax.Var("ghost", t())
            return relax.Function(f.params, relax.SeqExpr((), ghost), t(), True, f.attrs)

    x = relax.Var("x", t())
    mod = IRModule({GlobalVar("main"): relax.Function([x], relax.SeqExpr((), x), t())})
    ctx = PassContext.for_debug_level(1, verify=verify_module)
    with pytest.raises(VerifyError, match="after pass 'breaks-things'") as info:
        Breaks()(mod, ctx)
    assert "main: variable 'ghost' is used out of scope" in str(info.value)
    Breaks()(mod, PassContext())  # without KILN_DEBUG nothing checks


def test_debug_pass_context_reads_kiln_debug(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KILN_DEBUG", "1")
    assert len(debug_pass_context().instruments) == 1
    monkeypatch.setenv("KILN_DEBUG", "0")
    assert debug_pass_context().instruments == []
