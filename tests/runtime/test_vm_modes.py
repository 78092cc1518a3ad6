"""VM programs run in both modes (bytecode, compiled C over any-lists) with identical results."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import tvm_ffi

from kiln.errors import FunctionNotFoundError, KilnError
from kiln.runtime import NDArray, VirtualMachine
from kiln.runtime.vm_builtins import MakeCode, MatchCode
from kiln.runtime.vm_format import DTypeConst, Executable, FuncKind, ShapeConst, VMFunction
from tests.runtime.vm_programs import CTX, MODES, Fn, ProgramBuilder, R, two_kernels


@tvm_ffi.register_global_func("test.vm.add", override=True)
def _add(a: Any, b: Any) -> Any:
    return tvm_ffi.from_dlpack(np.from_dlpack(a) + np.from_dlpack(b))


@tvm_ffi.register_global_func("test.vm.mul", override=True)
def _mul(a: Any, b: Any) -> Any:
    return tvm_ffi.from_dlpack(np.from_dlpack(a) * np.from_dlpack(b))


@tvm_ffi.register_global_func("test.vm.describe", override=True)
def _describe(text: str, shape: Any, n: int) -> str:
    return f"{text}:{tuple(shape)}:{n}"


@tvm_ffi.register_global_func("test.vm.fail", override=True)
def _fail(x: Any) -> None:
    raise ValueError("test.vm.fail was called")


def run_both(prog: ProgramBuilder, *args: Any, name: str = "main") -> Any:
    """Run ``name`` in both modes; check the results agree; return the bytecode result."""
    results = [VirtualMachine(prog.build(mode))[name](*args) for mode in MODES]
    assert_same(results[0], results[1])
    return results[0]


def assert_same(a: Any, b: Any) -> None:
    assert type(a) is type(b)
    if isinstance(a, NDArray):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    elif isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    else:
        assert a == b


def test_packed_functions_registered_from_python_and_constants() -> None:
    prog = ProgramBuilder()
    f = prog.func("main", ("x",))
    ones = prog.const(np.ones(3, dtype="float32"))
    s = f.call("test.vm.add", R(0), ones)
    t = f.call("test.vm.mul", R(s), R(s))
    f.ret(t)
    x = np.arange(3, dtype="float32")
    out = run_both(prog, x)
    np.testing.assert_array_equal(out.numpy(), (x + 1) ** 2)


def kernel_chain() -> ProgramBuilder:
    """main(x): add_one then mul_two through one planned storage: (x + 1) * 2."""
    prog = ProgramBuilder(two_kernels())
    f = prog.func("main", ("x",))
    f32 = prog.const(DTypeConst("float32"))
    shape = f.call("vm.builtin.shape_of", R(0))
    storage = f.call("vm.builtin.alloc_storage", CTX, prog.const(ShapeConst((8192,))), 0)
    tmp = f.call("vm.builtin.alloc_tensor", R(storage), 0, R(shape), f32)
    f.call("add_one", R(0), R(tmp), void=True)
    out = f.call("vm.builtin.alloc_tensor", R(storage), 4096, R(shape), f32)
    f.call("mul_two", R(tmp), R(out), void=True)
    f.reset(tmp)
    f.ret(out)
    return prog


def test_compiled_kernels_with_dps_outputs_in_planned_storage() -> None:
    x = np.arange(7, dtype="float32")
    out = run_both(kernel_chain(), x)
    np.testing.assert_array_equal(out.numpy(), (x + 1) * 2)
    assert out.shape == (7,) and out.dtype == "float32"


def test_storage_bounds_are_checked() -> None:
    for mode in MODES:
        vm = VirtualMachine(kernel_chain().build(mode))
        with pytest.raises(ValueError, match="needs 8000 bytes; the storage has 8192"):
            vm["main"](np.zeros(2000, dtype="float32"))


def branchy() -> ProgramBuilder:
    """main(c, x): x + x when c else x * x, c a bool tensor read with read_if_cond."""
    prog = ProgramBuilder()
    f = prog.func("main", ("c", "x"))
    cond = f.call("vm.builtin.read_if_cond", R(0))

    def then(b: Any) -> None:
        b.ret(b.call("test.vm.add", R(1), R(1)))

    def orelse(b: Any) -> None:
        b.ret(b.call("test.vm.mul", R(1), R(1)))

    f.if_else(cond, then, orelse)
    return prog


def test_if_and_goto_take_both_branches() -> None:
    prog = branchy()
    x = np.array([3.0, 4.0], dtype="float32")
    np.testing.assert_array_equal(run_both(prog, np.array(True), x).numpy(), x + x)
    np.testing.assert_array_equal(run_both(prog, np.array(False), x).numpy(), x * x)
    np.testing.assert_array_equal(run_both(prog, 1, x).numpy(), x + x)


def test_if_merges_into_one_register_and_continues() -> None:
    prog = ProgramBuilder()
    f = prog.func("main", ("c", "x"))
    merged = f.reg()
    cond = f.call("vm.builtin.read_if_cond", R(0))

    def copy_from(callee: str) -> Callable[[Any], None]:
        def fill(b: Any) -> None:
            b.call("vm.builtin.copy", R(b.call(callee, R(1), R(1))), dst=merged)

        return fill

    f.if_else(cond, copy_from("test.vm.add"), copy_from("test.vm.mul"))
    f.ret(f.call("test.vm.add", R(merged), R(1)))
    x = np.array([2.0, 5.0], dtype="float32")
    np.testing.assert_array_equal(run_both(prog, True, x).numpy(), x + x + x)
    np.testing.assert_array_equal(run_both(prog, False, x).numpy(), x * x + x)


def test_tuples_in_and_out() -> None:
    prog = ProgramBuilder()
    f = prog.func("main", ("pair",))
    a = f.call("vm.builtin.tuple_getitem", R(0), 0)
    b = f.call("vm.builtin.tuple_getitem", R(0), 1)
    s = f.call("test.vm.add", R(a), R(b))
    inner = f.call("vm.builtin.make_tuple", R(s), 7)
    f.ret(f.call("vm.builtin.make_tuple", R(a), R(inner), prog.const("label")))
    x, y = np.ones(2, dtype="float32"), np.arange(2, dtype="float32")
    first, (total, seven), label = run_both(prog, (x, y))
    np.testing.assert_array_equal(first.numpy(), x)
    np.testing.assert_array_equal(total.numpy(), x + y)
    assert (seven, label) == (7, "label")


def test_closures_and_calls_between_vm_functions() -> None:
    prog = ProgramBuilder()
    helper = prog.func("scale_add", ("k", "x"))
    helper.ret(helper.call("test.vm.add", R(helper.call("test.vm.mul", R(0), R(1))), R(1)))
    f = prog.func("main", ("k", "x"))
    clo = f.call("vm.builtin.make_closure", Fn("scale_add"), R(0))
    via_closure = f.call("vm.builtin.invoke_closure", CTX, R(clo), R(1))
    direct = f.call("scale_add", R(0), R(via_closure))
    f.ret(f.call("vm.builtin.make_tuple", R(via_closure), R(direct), R(clo)))
    k, x = np.full(2, 3.0, dtype="float32"), np.array([1.0, 2.0], dtype="float32")
    for mode in MODES:
        vm = VirtualMachine(prog.build(mode))
        a, b, closure = vm["main"](k, x)
        np.testing.assert_array_equal(a.numpy(), k * x + x)
        np.testing.assert_array_equal(b.numpy(), k * (k * x + x) + (k * x + x))
        np.testing.assert_array_equal(np.from_dlpack(closure(x)), k * x + x)  # escapes to Python
        np.testing.assert_array_equal(vm["scale_add"](k, x).numpy(), k * x + x)


def test_recursion_gets_a_frame_per_call() -> None:
    @tvm_ffi.register_global_func("test.vm.dec", override=True)
    def _dec(n: int) -> int:
        return n - 1

    prog = ProgramBuilder()
    f = prog.func("count", ("n", "acc"))
    cond = f.call("vm.builtin.read_if_cond", R(0))

    def recurse(b: Any) -> None:
        acc = b.call("vm.builtin.make_tuple", R(1))
        b.ret(b.call("count", R(b.call("test.vm.dec", R(0))), R(acc)))

    f.if_else(cond, recurse, lambda b: b.ret(1))
    out = run_both(prog, 4, 0, name="count")
    depth = 0
    while isinstance(out, tuple):
        out, depth = out[0], depth + 1
    assert (out, depth) == (0, 4)


def test_strings_shapes_and_immediates_as_arguments() -> None:
    prog = ProgramBuilder()
    f = prog.func("main", ())
    f.ret(f.call("test.vm.describe", prog.const("hi"), prog.const(ShapeConst((2, 3))), -12))
    assert run_both(prog) == "hi:(2, 3):-12"


def symbolic() -> ProgramBuilder:
    """main(x: (n, 16), y: (n,)): check shapes, read n into the heap, make an (n, 2) tensor and
    return its shape."""
    prog = ProgramBuilder()
    f = prog.func("main", ("x", "y"))
    f32 = prog.const(DTypeConst("float32"))
    heap = f.call("vm.builtin.alloc_shape_heap", CTX, 2)
    store, imm, load = MatchCode.STORE_TO_HEAP, MatchCode.ASSERT_EQUAL_TO_IMM, 3
    x_ctx, y_ctx = prog.const("main: argument x"), prog.const("main: argument y")
    f.call("vm.builtin.check_tensor_info", R(0), 2, f32, x_ctx, void=True)
    f.call("vm.builtin.match_shape", R(0), R(heap), 2, store, 0, imm, 16, x_ctx, void=True)
    f.call("vm.builtin.match_shape", R(1), R(heap), 1, load, 0, y_ctx, void=True)
    shape = f.call("vm.builtin.make_shape", R(heap), 2, MakeCode.LOAD_SHAPE, 0, MakeCode.USE_IMM, 2)
    out = f.call("vm.builtin.empty", CTX, R(shape), f32)
    f.ret(f.call("vm.builtin.shape_of", R(out)))
    return prog


def test_symbolic_dims_are_read_checked_and_used() -> None:
    prog = symbolic()
    out = run_both(prog, np.zeros((5, 16), "float32"), np.zeros(5, "float32"))
    assert tuple(out) == (5, 2)
    for mode in MODES:
        main = VirtualMachine(prog.build(mode))["main"]
        with pytest.raises(ValueError, match=r"^main: argument x.shape\[1\] expected 16, got 15"):
            main(np.zeros((5, 15), "float32"), np.zeros(5, "float32"))
        with pytest.raises(ValueError, match=r"^main: argument y.shape\[0\] expected 5, got 4"):
            main(np.zeros((5, 16), "float32"), np.zeros(4, "float32"))
        with pytest.raises(TypeError, match="^main: argument x expected dtype float32, got int32"):
            main(np.zeros((5, 16), "int32"), np.zeros(5, "float32"))


def test_argument_count_and_unknown_names() -> None:
    for mode in MODES:
        vm = VirtualMachine(branchy().build(mode))
        with pytest.raises(TypeError, match=r"^main\(\) takes 2 arguments \(c, x\), got 1"):
            vm["main"](1)
        with pytest.raises(FunctionNotFoundError, match="no VM function 'mian'; its functions"):
            vm["mian"]
        assert "main" in vm and "test.vm.add" not in vm


def test_errors_in_callees_propagate_and_the_vm_stays_usable() -> None:
    prog = ProgramBuilder()
    f = prog.func("main", ("x", "bad"))
    cond = f.call("vm.builtin.read_if_cond", R(1))
    f.if_else(cond, lambda b: b.call("test.vm.fail", R(0), void=True), lambda b: None)
    f.ret(f.call("test.vm.add", R(0), R(0)))
    x = np.ones(2, dtype="float32")
    for mode in MODES:
        vm = VirtualMachine(prog.build(mode))
        with pytest.raises(ValueError, match="test.vm.fail was called"):
            vm["main"](x, True)
        np.testing.assert_array_equal(vm["main"](x, False).numpy(), x + x)


def test_missing_packed_function_is_reported_when_the_vm_is_made() -> None:
    prog = ProgramBuilder()
    f = prog.func("main", ("x",))
    f.ret(f.call("test.vm.never_registered", R(0)))
    with pytest.raises(KilnError, match="'test.vm.never_registered', which is neither"):
        VirtualMachine(prog.build("bytecode"))


def test_inputs_from_tvm_ffi_and_ndarray_and_outputs_through_dlpack() -> None:
    vm = VirtualMachine(kernel_chain().build("compiled"))
    x = np.arange(4, dtype="float32")
    a = vm["main"](tvm_ffi.from_dlpack(x))
    b = vm["main"](a)  # an NDArray goes back in without conversion
    np.testing.assert_array_equal(np.from_dlpack(b), ((x + 1) * 2 + 1) * 2)
    np.testing.assert_array_equal(np.asarray(a), (x + 1) * 2)
    assert np.asarray(a).ctypes.data == np.from_dlpack(a).ctypes.data  # views, not copies


def test_torch_tensors_in_and_out() -> None:
    torch = pytest.importorskip("torch")
    vm = VirtualMachine(kernel_chain().build("compiled"))
    t = vm["main"](torch.arange(4, dtype=torch.float32))
    expect = (torch.arange(4, dtype=torch.float32) + 1) * 2
    assert torch.equal(torch.from_dlpack(t), expect)


def test_functions_outlive_their_vm_safely() -> None:
    prog = branchy()
    main = VirtualMachine(prog.build("bytecode"))["main"]  # the caller keeps the VM alive
    x = np.ones(2, dtype="float32")
    np.testing.assert_array_equal(main(True, x).numpy(), x + x)
    vm = VirtualMachine(prog.build("bytecode"))
    raw = vm._handle("function", vm._index["main"])
    del vm
    gc.collect()
    with pytest.raises(RuntimeError, match="the VirtualMachine that made this function was freed"):
        raw(True, x)


def test_executable_must_be_an_executable() -> None:
    with pytest.raises(KilnError, match="expects an Executable or a loaded kiln library"):
        VirtualMachine("model.so")  # type: ignore[arg-type]
    with pytest.raises(KilnError, match="runs on the CPU only"):
        VirtualMachine(Executable(()), tvm_ffi.device("cuda", 0))


def test_a_kernel_missing_from_the_library_is_named() -> None:
    exe = kernel_chain().build("bytecode")
    extra = (VMFunction("sub_three", FuncKind.KERNEL),)
    bad = Executable(exe.functions + extra, exe.instructions, exe.constants, exe.library)
    with pytest.raises(KilnError, match=r"needs kernel 'sub_three', but .*\.so lacks it"):
        VirtualMachine(bad)
