"""Bad input at vm["main"] names the function, the parameter and what was expected, in both
modes alike; an unknown function lists the names; a library that is not a kiln executable, or
one of another format version, is refused through kiln.load."""

# ruff: noqa: F841 - names in R scripts are script variables, not Python locals

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import tvm_ffi

import kiln
from kiln.errors import FrontendError, FunctionNotFoundError, KilnError
from kiln.runtime import vm_format
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T
from kiln.vm import EXEC_MODES
from tests.vm.harness import machine


@I.ir_module
class Checked:
    @R.function
    def main(
        x: R.Tensor(("n", 16), "float32"),
        y: R.Tensor(("n",), "float32"),
        t: R.Tuple(R.Tensor((2,), "int32"), R.Shape(["n"])),
    ) -> R.Tensor(("n", 16), "float32"):
        n = T.int64()
        z = R.add(x, x)
        return z


def ok_args(n: int = 3) -> list:
    x = np.ones((n, 16), "float32")
    return [x, np.ones(n, "float32"), (np.zeros(2, "int32"), tvm_ffi.Shape((n,)))]


@pytest.fixture(params=EXEC_MODES)
def main(request: pytest.FixtureRequest):
    return machine(Checked, request.param)["main"]


def test_good_arguments_pass(main) -> None:
    x, y, t = ok_args()
    np.testing.assert_array_equal(main(x, y, t).numpy(), x + x)


@pytest.mark.parametrize(
    "change, kind, message",
    [
        (lambda a: a[:2], TypeError, r"main\(\) takes 3 arguments \(x, y, t\), got 2"),
        (
            lambda a: [a[0][:, :15], *a[1:]],
            ValueError,
            r"main: argument x\.shape\[1\] expected 16, got 15",
        ),
        (
            lambda a: [a[0], np.ones(4, "float32"), a[2]],
            ValueError,
            r"main: argument y\.shape\[0\] expected 3, got 4",
        ),
        (
            lambda a: [a[0].astype("float64"), *a[1:]],
            TypeError,
            r"main: argument x expected dtype float32, got float64",
        ),
        (
            lambda a: [a[0].reshape(3, 4, 4), *a[1:]],
            ValueError,
            r"main: argument x expected a tensor of rank 2, got rank 3",
        ),
        (lambda a: [7, *a[1:]], TypeError, r"main: argument x expected a tensor, got int"),
        (
            lambda a: [a[0], a[1], (a[2][0],)],
            ValueError,
            r"main: argument t expected a tuple of 2 items, got 1",
        ),
        (
            lambda a: [a[0], a[1], (a[2][0].astype("int64"), a[2][1])],
            TypeError,
            r"main: argument t\[0\] expected dtype int32, got int64",
        ),
        (
            lambda a: [a[0], a[1], (a[2][0], tvm_ffi.Shape((5,)))],
            ValueError,
            r"main: argument t\[1\]\[0\] expected 3, got 5",
        ),
    ],
    ids=["count", "shape", "symbolic", "dtype", "rank", "kind", "tuple", "field", "shape-field"],
)
def test_bad_arguments_name_the_parameter(main, change, kind, message) -> None:
    with pytest.raises(kind, match=message):
        main(*change(ok_args()))


def test_unknown_function_lists_the_names() -> None:
    vm = machine(Checked, "compiled")
    message = "no VM function 'mian'; its functions are main"
    with pytest.raises(FunctionNotFoundError, match=message):
        vm["mian"]


def test_kiln_load_refuses_a_library_that_is_not_an_executable(tmp_path: Path) -> None:
    from tests.vm.test_vm_build import Kernels

    plain = kiln.build(Kernels["add_one"].with_attr("global_symbol", "add_one"))
    path = plain.export_library(tmp_path / "kernels.so")
    with pytest.raises(KilnError, match="kernels.so is not a kiln VM executable"):
        kiln.load(path)
    with pytest.raises(KilnError, match="no file"):
        kiln.load(tmp_path / "missing.so")


def test_kiln_load_refuses_another_format_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ex = kiln.relax.build(Checked, exec_mode="bytecode")
    monkeypatch.setattr(vm_format, "VM_FORMAT_VERSION", 99)
    path = ex.export_library(tmp_path / "old.so")
    monkeypatch.undo()
    with pytest.raises(KilnError, match="old.so was written for kiln VM format version 99"):
        kiln.load(path)


class _RefusesDLPack:
    """A DLPack producer whose export always fails (as numpy's does for some arrays)."""

    def __dlpack__(self, **kwargs: object) -> object:
        raise BufferError("this producer refuses to export")

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


def _read_only(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    a.flags.writeable = False
    return a


def test_read_only_inputs_are_accepted_zero_copy(main) -> None:
    x, y, t = ok_args()
    x, y, t = _read_only(x * 3), _read_only(y), (_read_only(t[0]), t[1])
    np.testing.assert_array_equal(main(x, y, t).numpy(), x + x)
    assert not x.flags.writeable  # the caller's array is left as it was


@pytest.mark.parametrize(
    "change, kind, message",
    [
        (
            lambda a: [a[0].astype(ml_dtypes.bfloat16), *a[1:]],
            TypeError,
            r"main: argument x expected dtype float32, got bfloat16",
        ),
        (
            lambda a: [a[0], a[1], (a[2][0].astype(ml_dtypes.bfloat16), a[2][1])],
            TypeError,
            r"main: argument t\[0\] expected dtype int32, got bfloat16",
        ),
        (
            lambda a: [_read_only(a[0])[:, :15], *a[1:]],
            ValueError,
            r"main: argument x\.shape\[1\] expected 16, got 15",
        ),
        (
            lambda a: [a[0], _RefusesDLPack(), a[2]],
            ValueError,
            r"main: argument y \(_RefusesDLPack\) cannot be passed through DLPack: this producer",
        ),
        (
            lambda a: [a[0], a[1], (_RefusesDLPack(), a[2][1])],
            ValueError,
            r"main: argument t\[0\] \(_RefusesDLPack\) cannot be passed through DLPack",
        ),
    ],
    ids=["bfloat16", "bfloat16-field", "read-only-shape", "refused", "refused-field"],
)
def test_arrays_numpy_cannot_export_are_named(main, change, kind, message) -> None:
    """numpy's DLPack export refuses read-only and ml_dtypes arrays with a `BufferError` naming
    nothing; the VM call path passes them through or names the argument."""
    with pytest.raises(kind, match=message):
        main(*change(ok_args()))


@I.ir_module
class StorageFloat:
    @R.function
    def main(x: R.Tensor((4,), "bfloat16"), y: R.Tensor((2, 2), "float32")) -> R.Tuple(
        R.Tensor((2, 2), "bfloat16"), R.Tensor((2, 2), "float32")
    ):
        z = R.reshape(x, (2, 2))
        w = R.add(y, y)
        return (z, w)


@pytest.mark.parametrize("exec_mode", EXEC_MODES)
def test_compiled_model_takes_bfloat16_and_read_only_arrays(exec_mode: str) -> None:
    model = kiln.compile(StorageFloat, exec_mode=exec_mode)
    x = np.arange(4).astype(ml_dtypes.bfloat16)
    y = _read_only(np.arange(4, dtype="float32").reshape(2, 2))
    z, w = model(x, y)
    assert z.numpy().dtype == x.dtype
    np.testing.assert_array_equal(z.numpy(), x.reshape(2, 2))
    np.testing.assert_array_equal(w.numpy(), y + y)
    vm = kiln.runtime.VirtualMachine(model.executable)
    z, w = vm["main"](x, y)
    np.testing.assert_array_equal(w.numpy(), y + y)
    # the model checks its inputs by name first; the VM function names its argument
    with pytest.raises(FrontendError, match=r"input 'y' must be float32, got bfloat16"):
        model(x, y.astype(ml_dtypes.bfloat16))
    with pytest.raises(FrontendError, match=r"input 'x' has shape \(3,\): dim 0 must be 4"):
        model(_read_only(x[:3]), y)
    with pytest.raises(TypeError, match=r"main: argument y expected dtype float32, got bfloat16"):
        vm["main"](x, y.astype(ml_dtypes.bfloat16))
    with pytest.raises(ValueError, match=r"main: argument x\.shape\[0\] expected 4, got 3"):
        vm["main"](_read_only(x[:3]), y)
