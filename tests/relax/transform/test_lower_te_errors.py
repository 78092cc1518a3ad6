"""LowerTE on bad input: each a PassError naming the function, the operator (or codegen) and the
fix."""

# ruff: noqa: F841 - names in R scripts are script variables, not Python locals

from __future__ import annotations

import pytest

from kiln.errors import PassError
from kiln.ir import IRModule
from kiln.relax.backend import register_codegen, unregister_codegen
from kiln.relax.transform import LowerTE
from kiln.script import from_source
from kiln.script import ir as I
from kiln.script import relax as R


@I.ir_module
class CompilerCall:
    @R.function(private=True)
    def ext(x: R.Tensor((5, 7), "float32"), y: R.Tensor((5, 7), "float32")) -> R.Tensor(
        (5, 7), "float32"
    ):
        R.func_attr({"Primitive": 1, "Compiler": "CODEGEN", "global_symbol": "my_ext"})
        z = R.add(x, y)
        return z

    @R.function
    def main(a: R.Tensor((5, 7), "float32")) -> R.Tensor((5, 7), "float32"):
        cls = CompilerCall
        b = cls.ext(a, a)
        return b


def _with_codegen(name: str) -> IRModule:
    return from_source(CompilerCall.script().replace("CODEGEN", name))


@pytest.fixture
def codegen():
    def use(fn):
        register_codegen("test_bad_codegen", fn, override=True)

    yield use
    unregister_codegen("test_bad_codegen")


def test_compiler_without_registered_codegen() -> None:
    with pytest.raises(PassError) as e:
        LowerTE("test")(_with_codegen("no_such_codegen"))
    msg = str(e.value)
    assert "function 'ext' has Compiler='no_such_codegen'" in msg
    assert "fix: register one with kiln.relax.register_codegen('no_such_codegen')" in msg


def test_codegen_that_raises(codegen) -> None:
    def boom(func):
        raise RuntimeError("unsupported operator relax.add")

    codegen(boom)
    with pytest.raises(PassError) as e:
        LowerTE("test")(_with_codegen("test_bad_codegen"))
    msg = str(e.value)
    assert "external codegen 'test_bad_codegen' failed on function 'ext'" in msg
    assert "RuntimeError: unsupported operator relax.add" in msg
    assert "fix:" in msg


@pytest.mark.parametrize(
    "result, expected",
    [
        (42, "returned int for function 'ext'; fix: return C source"),
        ("int main(void) { return 0; }", "that does not define __tvm_ffi_my_ext; fix: export"),
    ],
)
def test_codegen_that_returns_no_c(codegen, result, expected: str) -> None:
    codegen(lambda func: result)
    with pytest.raises(PassError, match=expected):
        LowerTE("test")(_with_codegen("test_bad_codegen"))


def test_operator_without_legalization() -> None:
    @I.ir_module
    class Module:
        @R.function(private=True)
        def prim(x: R.Tensor((5, 7), "float32")) -> R.Tensor((5, 7), "float32"):
            R.func_attr({"Primitive": 1})
            s = R.shape_of(x)
            y = R.reshape(x, s)
            return y

        @R.function
        def main(a: R.Tensor((5, 7), "float32")) -> R.Tensor((5, 7), "float32"):
            cls = Module
            b = cls.prim(a)
            return b

    with pytest.raises(PassError) as e:
        LowerTE("test")(Module)
    msg = str(e.value)
    assert "function 'prim': operator relax.shape_of has no legalization" in msg
    assert "fix: give its record in kiln/relax/op/builtin.py a legalize function" in msg


def test_opaque_operator_fused_with_others() -> None:
    @I.ir_module
    class Module:
        @R.function(private=True)
        def prim(x: R.Tensor((5, 7), "float32")) -> R.Tensor((5, 7), "float32"):
            R.func_attr({"Primitive": 1})
            s = R.nn.softmax(x)
            y = R.add(s, x)
            return y

        @R.function
        def main(a: R.Tensor((5, 7), "float32")) -> R.Tensor((5, 7), "float32"):
            cls = Module
            b = cls.prim(a)
            return b

    with pytest.raises(PassError) as e:
        LowerTE("test")(Module)
    msg = str(e.value)
    assert "function 'prim': opaque operator relax.nn.softmax is fused with 1 other" in msg
    assert "fix: give it a primitive function of its own" in msg


def test_opaque_call_inside_a_primitive() -> None:
    @I.ir_module
    class Module:
        @R.function(private=True)
        def prim(x: R.Tensor((5, 7), "float32")) -> R.Tensor((5, 7), "float32"):
            R.func_attr({"Primitive": 1})
            y = R.call_pure_packed("my_func", x, sinfo_args=R.Tensor((5, 7), "float32"))
            return y

        @R.function
        def main(a: R.Tensor((5, 7), "float32")) -> R.Tensor((5, 7), "float32"):
            cls = Module
            b = cls.prim(a)
            return b

    with pytest.raises(PassError) as e:
        LowerTE("test")(Module)
    msg = str(e.value)
    assert "function 'prim': operator relax.call_pure_packed has no legalization" in msg
    assert "call it outside primitive functions" in msg
