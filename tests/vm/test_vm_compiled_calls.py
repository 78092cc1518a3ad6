"""How compiled-mode C calls the VM builtins: directly through the context's table (by index in
BUILTINS), ``vm.builtin.copy`` inline, and input checks with constant arguments behind inline
guards that fall back to the builtin, so that errors are the builtin's, as in bytecode mode; the
VM calls the typed ``__vmtir__`` function through the address ``__vmtir_entry__<name>`` gives."""

# ruff: noqa: F841 - names in R scripts are script variables, not Python locals

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln.runtime import VirtualMachine
from kiln.runtime.vm_builtins import BUILTINS, builtin_index
from kiln.runtime.vm_runtime import load_vm_runtime
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T
from kiln.vm import EXEC_MODES
from tests.vm.harness import machine


@I.ir_module
class Static:
    @R.function
    def main(x: R.Tensor((4, 16), "float32")) -> R.Tensor((4, 16), "float32"):
        z = R.add(x, x)
        return z


def test_builtin_index_is_the_position_in_the_table() -> None:
    load_vm_runtime()  # refuses a C table in another order than BUILTINS
    assert [builtin_index(b.name) for b in BUILTINS] == list(range(len(BUILTINS)))
    assert builtin_index("test.vm.add") is None


def test_compiled_source_calls_builtins_directly() -> None:
    source = kiln.relax.build(Static, exec_mode="compiled").library.inspect_source()
    body = source[source.index("v_vmtir__main(void* ctx_ptr, void* r, void* c, void* f) {") :]
    assert "kiln_vm_call_builtin(ctx_ptr, &cache, " in body
    assert '&cache, "vm.builtin.' not in body  # no builtin looked up by name
    assert "kiln_vm_anylist_copy(r, 1, &item)" in body
    assert "kiln_vm_tensor_ok(&kiln_x, 2, &kiln_d)" in body
    assert "kiln_spec[4] = {1, 4, 1, 16}" in body
    assert "result->v_ptr = (void*)&v_vmtir__main;" in body  # __vmtir_entry__main: no checks


@pytest.mark.parametrize(
    "x, kind, message",
    [
        (
            np.ones((4, 15), "float32"),
            ValueError,
            r"main: argument x.shape\[1\] expected 16, got 15",
        ),
        (np.ones((4, 16), "float64"), TypeError, "main: argument x expected dtype float32, got"),
        (np.ones((4, 16, 1), "float32"), ValueError, "main: argument x expected a tensor of rank"),
        ("text", TypeError, "main: argument x expected a tensor, got str"),
    ],
)
def test_guarded_checks_raise_the_builtins_errors_in_both_modes(x, kind, message) -> None:
    errors = []
    for mode in EXEC_MODES:
        with pytest.raises(kind, match=message) as info:
            machine(Static, mode)["main"](x)
        errors.append(str(info.value))
    assert errors[0] == errors[1]


@pytest.mark.parametrize("exec_mode", EXEC_MODES)
def test_good_input_passes_the_guards(exec_mode: str) -> None:
    x = np.arange(64, dtype="float32").reshape(4, 16)
    np.testing.assert_array_equal(machine(Static, exec_mode)["main"](x).numpy(), x + x)


@I.ir_module
class Symbolic:
    @R.function
    def main(x: R.Tensor(("b", "s", 16), "float32"), w: R.Tensor((16, 24), "float32")) -> R.Tensor(
        ("b", "s", 24), "float32"
    ):
        b = T.int64()
        s = T.int64()
        with R.dataflow():
            f = R.reshape(x, R.shape([b * s, 16]))
            y = R.nn.softmax(R.matmul(f, w), axis=-1)
            z = R.reshape(y, R.shape([b, s, 24]))
            R.output(z)
        return z


def test_kernels_with_symbolic_dims_are_called_directly_with_dims_from_the_heap() -> None:
    """Compiled mode calls a kernel with symbolic int parameters itself, reading the dims from
    the shape heap, not through ``vm.builtin.call_tir_dyn`` and a shape object; bytecode mode
    keeps the builtin. Both compute softmax at several sizes."""
    exes = {m: kiln.relax.build(Symbolic, exec_mode=m) for m in EXEC_MODES}
    body = exes["compiled"].library.inspect_source()
    body = body[body.index("v_vmtir__main(void* ctx_ptr, void* r, void* c, void* f) {") :]
    body = body[: body.index("\n}\n")]
    assert "call_tir_dyn" not in body and "kiln_vm_heap_load(&KILN_ANYLIST_GET(r, " in body
    w = np.random.default_rng(0).standard_normal((16, 24)).astype("float32")
    for b, n in ((1, 1), (2, 7), (3, 33)):
        x = np.random.default_rng(n).standard_normal((b, n, 16)).astype("float32")
        z = x @ w
        e = np.exp(z - z.max(-1, keepdims=True))
        for exe in exes.values():
            got = kiln.relax.VirtualMachine(exe)["main"](x, w).numpy()
            np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=1e-4, atol=1e-6)


def test_symbolic_storage_sizes_are_ints_read_from_the_heap() -> None:
    """A storage of symbolic size is allocated with its byte count read from the shape heap
    (an int argument), not through a ``make_shape`` object; the shapes of the tensors placed in
    it are still made. Results are checked at several sizes by the test above."""
    body = kiln.relax.build(Symbolic, exec_mode="compiled").library.inspect_source()
    body = body[body.index("v_vmtir__main(void* ctx_ptr, void* r, void* c, void* f) {") :]
    body = body[: body.index("\n}\n")]
    storages = [ln for ln in body.splitlines() if '"vm.builtin.alloc_storage"' in ln]
    assert storages, body
    heap_int = "(TVMFFIAny){.type_index = kTVMFFIInt, .v_int64 = (int64_t)(kiln_vm_heap_load("
    for line in storages:  # argv: the context, then the size
        after_ctx = line.split("argv[5] = {", 1)[1].split("}, ", 1)[1]
        assert after_ctx.startswith(heap_int), line
    # the shapes of the two tensors placed in storages and of the output, none for a storage
    assert body.count('"vm.builtin.make_shape"') == 3


def test_long_vm_functions_compile_at_o1(monkeypatch: pytest.MonkeyPatch) -> None:
    """A VM function longer than `QUICK_VM_LINES` carries GCC's ``optimize("O1")`` (its -O2
    compile time grows faster than its length); a short one does not; both compute the same."""
    from kiln.codegen import c_host

    head = 'optimize("O1")'
    short = kiln.relax.build(Static, exec_mode="compiled")
    assert head not in short.library.inspect_source()
    monkeypatch.setattr(c_host, "QUICK_VM_LINES", 3)
    quick = kiln.relax.build(Static, exec_mode="compiled")
    source = quick.library.inspect_source()
    assert f"__attribute__(({head}))\n#endif\nstatic int32_t v_vmtir__main(" in source
    x = np.arange(64, dtype="float32").reshape(4, 16)
    np.testing.assert_array_equal(VirtualMachine(quick)["main"](x).numpy(), x + x)
