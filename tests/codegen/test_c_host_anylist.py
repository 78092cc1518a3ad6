"""CodeGenCHost prints a compiled-mode VM function (``__vmtir__<name>``) in exactly the C forms
of the runtime's any-list contract (kiln.runtime.vm_anylist): the header once, setitem calls
through kiln_vm_call_packed / _cpacked, getitem as a packed argument, call statements routed
through the VM context, cpacked calls without TVM's trailing null handle."""

# ruff: noqa: F821 - names in T scripts are script variables

from __future__ import annotations

import numpy as np
import pytest

from kiln.codegen import codegen_c
from kiln.driver import build, lower
from kiln.errors import CodegenError
from kiln.runtime import VirtualMachine
from kiln.runtime.vm_anylist import (
    c_any,
    c_call_builtin,
    c_call_cpacked,
    c_copy,
    c_cpacked_decl,
    c_getitem,
    c_resetitem,
)
from kiln.runtime.vm_builtins import builtin_index
from kiln.runtime.vm_format import DTypeConst, Executable, FuncKind, ShapeConst, VMFunction
from kiln.script import ir as I
from kiln.script import tir as T


@I.ir_module
class Compiled:
    @T.prim_func
    def add_one(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            B[i] = A[i] + T.float32(1)

    @T.prim_func
    def __vmtir__main(ctx_ptr: T.handle, r: T.handle, c: T.handle, f: T.handle):
        T.func_attr({"global_symbol": "__vmtir__main"})
        T.anylist_setitem_call_packed(
            r, 3, "vm.builtin.alloc_storage", ctx_ptr, T.anylist_getitem(c, 0), T.int64(0)
        )
        T.anylist_setitem_call_packed(
            r,
            2,
            "vm.builtin.alloc_tensor",
            T.anylist_getitem(r, 3),
            T.int64(0),
            T.anylist_getitem(c, 1),
            T.anylist_getitem(c, 2),
        )
        if T.cast(T.tvm_call_packed("vm.builtin.read_if_cond", T.anylist_getitem(r, 1)), "bool"):
            T.call_cpacked(
                "add_one",
                T.anylist_getitem(r, 0),
                T.anylist_getitem(r, 2),
                T.reinterpret("handle", T.uint64(0)),
            )
        else:
            T.anylist_setitem_call_cpacked(
                r,
                4,
                "add_one",
                T.anylist_getitem(r, 0),
                T.anylist_getitem(r, 2),
                T.reinterpret("handle", T.uint64(0)),
            )
        T.tvm_call_packed("vm.builtin.null_value")
        T.anylist_resetitem(r, 3)
        T.anylist_setitem_call_packed(r, 2, "vm.builtin.copy", T.anylist_getitem(r, 2))


def source() -> str:
    return codegen_c(lower(Compiled))


def test_the_calls_print_the_contract_forms() -> None:
    src = source()
    exit_ = "return -1;"
    ctx = c_any("handle", "ctx_ptr")
    expected = [
        c_call_builtin(
            "vm.builtin.alloc_storage",
            builtin_index("vm.builtin.alloc_storage"),
            [ctx, c_getitem("c", 0), c_any("int", "((int64_t)0LL)")],
            ("r", 3),
            on_error=exit_,
        ),
        c_call_cpacked("add_one", [c_getitem("r", 0), c_getitem("r", 2)], None, on_error=exit_),
        c_call_cpacked("add_one", [c_getitem("r", 0), c_getitem("r", 2)], ("r", 4), on_error=exit_),
        c_call_builtin("vm.builtin.null_value", 11, [], None, on_error=exit_),
        c_resetitem("r", 3),
        c_copy(("r", 2), c_getitem("r", 2), on_error=exit_),
        c_cpacked_decl("add_one"),
    ]
    missing = [e for e in expected if e not in src]
    assert not missing, "\n".join(missing) + "\n---\n" + src
    assert src.count("#define KILN_VM_ANYLIST_H_") == 1
    assert "kiln_call_global(" in src and '"vm.builtin.read_if_cond"' in src  # a value


def test_the_compiled_function_runs_and_profiles_its_kernel() -> None:
    lib = build(Compiled)
    exe = Executable(
        (
            VMFunction("main", FuncKind.VMTIR, ("x", "c"), 5),
            VMFunction("add_one", FuncKind.KERNEL),
        ),
        (),
        (ShapeConst((16,)), ShapeConst((4,)), DTypeConst("float32")),
        lib,
    )
    vm = VirtualMachine(exe)
    x = np.arange(4, dtype="float32")
    for cond in (True, False):
        np.testing.assert_array_equal(vm["main"](x, cond).numpy(), x + 1)
    report = vm.profile("main", x, True)
    assert [r.kernel for r in report.rows] == ["add_one"]


def test_any_list_calls_outside_a_vm_function_are_refused() -> None:
    @I.ir_module
    class Stray:
        @T.prim_func
        def main(r: T.handle):
            T.anylist_resetitem(r, 0)

    with pytest.raises(CodegenError, match="anylist_resetitem is only valid in a compiled-mode"):
        codegen_c(lower(Stray))
