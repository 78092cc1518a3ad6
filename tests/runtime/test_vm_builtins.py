"""The VM builtins (C, registered as tvm-ffi globals): the table, and each builtin on its own.

Builtins that need the VM context are exercised through VM programs in test_vm_modes.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import tvm_ffi

from kiln.runtime.vm_builtins import BUILTIN_PREFIX, BUILTINS, MakeCode, MatchCode, builtin
from kiln.runtime.vm_runtime import load_vm_runtime


@pytest.fixture(scope="module", autouse=True)
def runtime() -> None:
    load_vm_runtime()


def call(name: str, *args: object) -> object:
    return tvm_ffi.get_global_func(BUILTIN_PREFIX + name)(*args)


def test_table_and_registered_globals_are_the_same_set() -> None:
    registered = {n for n in tvm_ffi.registry.list_global_func_names() if n.startswith("vm.")}
    assert registered == {b.name for b in BUILTINS}


def test_loading_twice_is_harmless() -> None:
    first = load_vm_runtime()
    assert load_vm_runtime() is first
    first.module.get_function("kiln_vm_init")()  # registers everything again
    assert call("make_tuple", 1, 2)[1] == 2


@pytest.mark.parametrize("b", BUILTINS, ids=lambda b: b.name)
def test_every_builtin_checks_its_argument_count(b: object) -> None:
    counts = [b.min_args - 1] if b.min_args > 0 else []
    if b.max_args is not None:
        counts.append(b.max_args + 1)
    for n in counts:
        with pytest.raises(TypeError, match=b.name.replace(".", r"\.")):
            tvm_ffi.get_global_func(b.name)(*([0] * n))


def test_builtin_lookup_names_the_builtins() -> None:
    assert builtin("copy") is builtin("vm.builtin.copy")
    with pytest.raises(KeyError, match="alloc_storage"):
        builtin("no_such_builtin")


def test_context_builtins_refuse_anything_but_a_vm_context() -> None:
    with pytest.raises(TypeError, match="alloc_storage: argument 0 must be the VM context"):
        call("alloc_storage", 7, 16)


def test_tuples() -> None:
    x = np.arange(3, dtype="float32")
    t = call("make_tuple", x, 5, "s", (1, 2))
    assert len(t) == 4
    np.testing.assert_array_equal(np.from_dlpack(call("tuple_getitem", t, 0)), x)
    assert call("tuple_getitem", t, 1) == 5
    assert call("tuple_getitem", t, 2) == "s"
    assert tuple(call("tuple_getitem", t, 3)) == (1, 2)
    with pytest.raises(IndexError, match="index 4 out of range for a tuple of 4 items"):
        call("tuple_getitem", t, 4)
    with pytest.raises(TypeError, match="expected a tuple, got int"):
        call("tuple_getitem", 3, 0)


def test_closure_prepends_captured_values() -> None:
    def f(a: int, b: int, c: int) -> int:
        return a * 100 + b * 10 + c

    clo = call("make_closure", tvm_ffi.convert(f), 1, 2)
    assert clo(3) == 123
    nested = call("make_closure", call("make_closure", tvm_ffi.convert(f), 1), 4)
    assert nested(5) == 145
    with pytest.raises(TypeError, match="expected a function"):
        call("make_closure", 3)


@pytest.mark.parametrize(
    "value, expect",
    [
        (True, True),
        (0, False),
        (np.array(True), True),
        (np.array(False), False),
        (np.array(3, dtype="int32"), True),
        (np.array([0], dtype="int64"), False),
        (np.array(0.5, dtype="float32"), True),
        (np.array(0, dtype="uint8"), False),
    ],
)
def test_read_if_cond(value: object, expect: bool) -> None:
    assert call("read_if_cond", value) is expect


def test_read_if_cond_rejects_other_values() -> None:
    with pytest.raises(TypeError, match="one-element CPU tensor, got tensor"):
        call("read_if_cond", np.zeros(2, dtype="bool"))
    with pytest.raises(TypeError, match="got str"):
        call("read_if_cond", "yes")


def test_copy_and_null_value() -> None:
    x = np.arange(4, dtype="float32")
    y = call("copy", x)
    assert np.from_dlpack(y).ctypes.data == x.ctypes.data  # same tensor, no data copy
    assert call("copy", "text") == "text"
    assert call("copy", None) is None
    assert call("null_value") is None


def test_shape_of_tensor_to_shape_and_reshape() -> None:
    x = np.arange(6, dtype="float32").reshape(2, 3)
    assert tuple(call("shape_of", x)) == (2, 3)
    assert tuple(call("tensor_to_shape", np.array([4, 5], dtype="int32"))) == (4, 5)
    v = call("reshape", x, tvm_ffi.Shape((3, 2)))
    view = np.from_dlpack(v)
    assert view.shape == (3, 2)
    view[0, 0] = 42.0  # a view: the original sees the write
    assert x[0, 0] == 42.0
    with pytest.raises(ValueError, match=r"reshape a tensor of shape \(2, 3\) to \(4, 2\)"):
        call("reshape", x, tvm_ffi.Shape((4, 2)))
    with pytest.raises(ValueError, match="non-contiguous tensor"):
        call("reshape", x.T, tvm_ffi.Shape((6,)))


def test_call_tir_dyn_appends_the_shape_values() -> None:
    seen = []
    kernel = tvm_ffi.convert(lambda a, n, m: seen.append((a, n, m)))
    call("call_tir_dyn", kernel, "arg", tvm_ffi.Shape((7, 8)))
    assert seen == [("arg", 7, 8)]


def test_check_tensor_info() -> None:
    x = np.zeros((2, 3), dtype="float32")
    assert call("check_tensor_info", x, 2, tvm_ffi.dtype("float32"), "main: argument x") is None
    assert call("check_tensor_info", x, -1, None, "main: argument x") is None
    with pytest.raises(
        ValueError, match="^main: argument x expected a tensor of rank 3, got rank 2"
    ):
        call("check_tensor_info", x, 3, None, "main: argument x")
    with pytest.raises(TypeError, match="^main: argument x expected dtype int32, got float32"):
        call("check_tensor_info", x, 2, tvm_ffi.dtype("int32"), "main: argument x")
    with pytest.raises(TypeError, match="^main: argument x expected a tensor, got int"):
        call("check_tensor_info", 3, 2, None, "main: argument x")


def test_check_shape_tuple_and_func_info() -> None:
    call("check_shape_info", tvm_ffi.Shape((1, 2)), 2, "f: argument s")
    with pytest.raises(ValueError, match="f: argument s expected a shape of 3 dims, got 2"):
        call("check_shape_info", tvm_ffi.Shape((1, 2)), 3, "f: argument s")
    call("check_tuple_info", (1, 2), 2, "f: argument t")
    with pytest.raises(ValueError, match="f: argument t expected a tuple of 3 items, got 2"):
        call("check_tuple_info", (1, 2), 3, "f: argument t")
    call("check_func_info", tvm_ffi.convert(lambda: None), "f: argument g")
    with pytest.raises(TypeError, match="f: argument g expected a function, got int"):
        call("check_func_info", 1, "f: argument g")


def _heap(n: int = 4) -> tuple[np.ndarray, tvm_ffi.Tensor]:
    arr = np.zeros(n, dtype="int64")
    return arr, tvm_ffi.from_dlpack(arr)


def test_match_shape_stores_and_checks_symbolic_dims() -> None:
    heap, h = _heap()
    x = np.zeros((8, 16), dtype="float32")
    store, imm = MatchCode.STORE_TO_HEAP, MatchCode.ASSERT_EQUAL_TO_IMM
    load = MatchCode.ASSERT_EQUAL_TO_LOAD
    call("match_shape", x, h, 2, store, 0, imm, 16, "main: argument x")
    assert heap[0] == 8
    call("match_shape", np.zeros((8, 1)), h, 2, load, 0, MatchCode.NO_OP, 0, "main: argument y")
    with pytest.raises(ValueError, match=r"^main: argument x.shape\[1\] expected 16, got 15"):
        call("match_shape", np.zeros((8, 15)), h, 2, load, 0, imm, 16, "main: argument x")
    with pytest.raises(ValueError, match=r"^main: argument y.shape\[0\] expected 8, got 9"):
        call("match_shape", np.zeros((9, 1)), h, 2, load, 0, imm, 1, "main: argument y")
    with pytest.raises(ValueError, match="main: argument x expected 2 dimensions, got 1"):
        call("match_shape", np.zeros(8), h, 2, load, 0, imm, 16, "main: argument x")
    with pytest.raises(ValueError, match=r"main: argument s\[0\] expected 8, got 3"):
        call("match_shape", tvm_ffi.Shape((3,)), h, 1, load, 0, "main: argument s")
    with pytest.raises(IndexError, match="shape heap slot 9 out of range"):
        call("match_shape", x, h, 2, store, 9, imm, 16, "main: argument x")


def test_make_shape_and_prim_values() -> None:
    heap, h = _heap()
    heap[2] = 11
    shape = call("make_shape", h, 3, MakeCode.USE_IMM, 4, MakeCode.LOAD_SHAPE, 2, 0, 1)
    assert tuple(shape) == (4, 11, 1)
    call("match_prim_value", 5, h, MatchCode.STORE_TO_HEAP, 3, "main: argument n")
    assert heap[3] == 5
    assert call("make_prim_value", h, MakeCode.LOAD_SHAPE, 3) == 5
    assert call("make_prim_value", None, MakeCode.USE_IMM, 9) == 9
    with pytest.raises(ValueError, match="^main: argument n expected 5, got 6"):
        call("match_prim_value", 6, h, MatchCode.ASSERT_EQUAL_TO_LOAD, 3, "main: argument n")
    with pytest.raises(TypeError, match="heap\\) expected a 1-D int64 CPU tensor"):
        call("make_shape", np.zeros(2, dtype="int32"), 1, MakeCode.LOAD_SHAPE, 0)
