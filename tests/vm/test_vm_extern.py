"""External codegens through kiln.relax.build, in both VM modes: a registered test codegen is
called once per function and its C is linked into the library, called as a kernel, exported
with it; a dynamic-result extern function runs after its shape function (of tensor shapes, of
a shape value); a codegen returning None leaves the symbol to the global registry; the oneDNN
partition of a conv/linear model matches numpy. The executable's flags are the ones its library
was compiled with."""

from __future__ import annotations

import numpy as np
import pytest
import tvm_ffi

import kiln
from kiln.codegen.build import compile_flags
from kiln.driver.relax_build import model_flags
from kiln.ir import Target
from kiln.relax.backend import dnnl, register_codegen, unregister_codegen
from kiln.script import from_source
from kiln.vm import EXEC_MODES
from tests.relax.backend.test_dnnl import ConvNet, _inputs, _reference
from tests.relax.transform.test_call_shape_functions import Reshape
from tests.relax.transform.test_lower_te import _ADD_TWICE_C, _compiler_module
from tests.vm.harness import assert_same, plain
from tests.vm.test_vm_models import ConvBlock

CODEGEN = "test_vm_extern"


@pytest.fixture
def codegen_log():
    """A codegen whose C computes ``x + 2 * y`` (so its result proves that its code ran)."""
    log: list[str] = []

    def codegen(func):
        log.append(func.global_symbol)
        return _ADD_TWICE_C.replace("SYMBOL", func.global_symbol)

    register_codegen(CODEGEN, codegen)
    yield log
    unregister_codegen(CODEGEN)


def build_both(mod, **kwargs):
    return {m: kiln.relax.build(mod, "c", m, **kwargs) for m in EXEC_MODES}


def run(executables, *args):
    """``main(*args)`` with each executable: the (identical) result as numpy."""
    outs = [plain(kiln.relax.VirtualMachine(ex)["main"](*args)) for ex in executables.values()]
    assert_same(outs[0], outs[1])
    return outs[0]


def test_a_test_codegen_is_called_once_per_function_and_its_c_runs(codegen_log, tmp_path) -> None:
    mod = _compiler_module(CODEGEN, symbol="vm_ext_add")
    for mode in EXEC_MODES:
        codegen_log.clear()
        ex = kiln.relax.build(mod, "c", mode)
        assert codegen_log == ["vm_ext_add"]  # one function called twice: one codegen call
        assert ex.kernels == ("vm_ext_add",)
        assert "__tvm_ffi_vm_ext_add" in ex.source
        a = np.arange(35, dtype="float32").reshape(5, 7)
        vm = kiln.relax.VirtualMachine(ex)
        np.testing.assert_allclose(vm["main"](a).numpy(), (a + 2 * a) + 2 * a)
        report = vm.profile("main", a)
        assert [(r.kernel, r.calls) for r in report.rows] == [("vm_ext_add", 2)]
        loaded = kiln.load(ex.export_library(tmp_path / f"ext_{mode}.so"))
        np.testing.assert_allclose(loaded(a).numpy(), 5 * a)


_DYNAMIC = """
@I.ir_module
class Module:
    @R.function(private=True)
    def ext(x: R.Tensor(("n", 7), "float32"), y: R.Tensor(("n", 7), "float32")) -> R.Tensor(
        ndim=2, dtype="float32"
    ):
        R.func_attr({"Primitive": 1, "Compiler": "CODEGEN", "global_symbol": "vm_ext_dyn"})
        z = R.add(x, y)
        return z

    @R.function
    def main(a: R.Tensor((5, 7), "float32")) -> R.Tensor(ndim=2, dtype="float32"):
        cls = Module
        b = cls.ext(a, a)
        return b
"""


def test_a_dynamic_result_extern_function_runs_after_its_shape_function(codegen_log) -> None:
    mod = from_source(_DYNAMIC.replace("CODEGEN", CODEGEN))
    exes = build_both(mod)
    assert set(exes["compiled"].kernels) >= {"vm_ext_dyn", "shape_func_add"}
    a = np.linspace(0, 1, 35, dtype="float32").reshape(5, 7)
    got = run(exes, a)
    assert got.shape == (5, 7)
    np.testing.assert_allclose(got, 3 * a, rtol=1e-6)


@tvm_ffi.register_global_func("vm_ext_registered", override=True)
def _registered(x: object, y: object, out: object) -> None:
    np.from_dlpack(out)[:] = np.from_dlpack(x) - np.from_dlpack(y)


def test_a_codegen_returning_none_leaves_the_symbol_to_the_registry() -> None:
    register_codegen(CODEGEN, lambda f: None, override=True)
    try:
        mod = _compiler_module(CODEGEN, symbol="vm_ext_registered")
        exes = build_both(mod)
    finally:
        unregister_codegen(CODEGEN)
    assert exes["compiled"].kernels == ()  # not in the library: found by name at run time
    a = np.arange(35, dtype="float32").reshape(5, 7)
    np.testing.assert_array_equal(run(exes, a), -a)  # (a - a) - a


@tvm_ffi.register_global_func("ext_reshape", override=True)
def _ext_reshape(x: object, shape: object, out: object) -> None:
    np.from_dlpack(out)[:] = np.from_dlpack(x).reshape(tuple(shape))


def test_an_extern_function_of_a_shape_value_is_sized_from_that_value() -> None:
    """Reshape.ext_reshape (Extern=1, no codegen: found by name) takes a shape value, which its
    shape function reads as data (state 1)."""
    exes = build_both(Reshape)
    x = np.arange(12, dtype="float32")
    for shape in [(3, 4), (6, 2)]:
        got = run(exes, x, tvm_ffi.Shape(shape))
        np.testing.assert_array_equal(got, x.reshape(shape))


def test_executable_flags_are_the_librarys_compile_flags() -> None:
    ex = kiln.relax.build(ConvBlock, "c", "bytecode")
    assert ex.flags == model_flags(Target("c"))  # a model's library: MODEL_FLAGS
    assert "-O2" in ex.flags and "-O3" not in ex.flags
    assert any(f.startswith("-march=") for f in ex.flags)
    ex = kiln.relax.build(ConvBlock, "c", "bytecode", flags=["-O2", "-fopenmp"])
    assert ex.flags == compile_flags(Target("c"), ["-O2", "-fopenmp"])
    assert ex.flags[:2] == ("-O2", "-fopenmp") and ex.flags[-1].startswith("-march=")


needs_onednn = pytest.mark.skipif(dnnl.paths() is None, reason="needs kiln[dnnl] (oneDNN)")


@needs_onednn
def test_dnnl_partition_of_a_conv_linear_model_runs_in_both_modes(tmp_path) -> None:
    exes = build_both(ConvNet, external_codegens=["dnnl"])
    args = _inputs()
    want = _reference(*args)
    np.testing.assert_allclose(run(exes, *args), want, rtol=1e-4, atol=1e-4)
    ex = exes["compiled"]
    assert {k for k in ex.kernels if k.startswith("dnnl_")} == {
        "dnnl_conv2d_add_relu_add",
        "dnnl_conv2d",
        "dnnl_permute_dims_matmul_add_relu_add",
        "dnnl_matmul",
    }
    assert "-ldnnl" in ex.flags
    loaded = kiln.load(ex.export_library(tmp_path / "convnet.so"))
    np.testing.assert_allclose(loaded(*args).numpy(), want, rtol=1e-4, atol=1e-4)
    model = kiln.compile(ConvNet, external_codegens=["dnnl"])
    np.testing.assert_allclose(model(*args).numpy(), want, rtol=1e-4, atol=1e-4)


def test_debug_3_prints_the_linked_source(codegen_log, monkeypatch, capsys) -> None:
    monkeypatch.setenv("KILN_DEBUG", "3")
    kiln.relax.build(_compiler_module(CODEGEN, symbol="vm_ext_debug"), "c", "bytecode")
    err = capsys.readouterr().err
    assert "# ---- after lower-te ----" in err and "# ---- after call-tir-rewrite ----" in err
    assert "# ---- generated source for target c" in err
    assert "/* ---- external function vm_ext_debug (test_vm_extern) ---- */" in err
