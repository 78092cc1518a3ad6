"""Compiled-mode VM codegen, seed 003's five expected-TIR cases: each graph function becomes
``__vmtir__<name>(ctx_ptr, r, c, f)`` over any-lists, compared structurally with the expected
PrimFunc. Inputs are already in VM form (shapes lowered, allocation explicit)."""

# ruff: noqa: F821, F841 - names in R scripts are script variables, not Python names

from __future__ import annotations

from kiln import relax
from kiln.ir import IRModule
from kiln.ir.structural import assert_structural_equal
from kiln.runtime.vm_format import FuncKind
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T
from kiln.vm import ExecBuilder, vm_codegen


def compiled(mod: IRModule) -> IRModule:
    return relax.vm_codegen(mod, exec_mode="compiled")


def test_packed_call_result_and_return_copy() -> None:
    @I.ir_module
    class Before:
        @R.function
        def foo(x: R.Tensor):
            R.func_attr({"global_symbol": "foo"})
            y = R.call_packed("test.vm.add", x, x, sinfo_args=(R.Tensor))
            return y

    @I.ir_module
    class Expected:
        @T.prim_func
        def __vmtir__foo(ctx_ptr: T.handle, r: T.handle, c: T.handle, f: T.handle):
            T.func_attr({"global_symbol": "__vmtir__foo"})
            # register 0: x, 1: the result, 2: the packed call's value
            T.anylist_setitem_call_packed(
                r,
                T.int32(2),
                "test.vm.add",
                T.anylist_getitem(r, T.int32(0)),
                T.anylist_getitem(r, T.int32(0)),
            )
            T.anylist_setitem_call_packed(
                r, T.int32(1), "vm.builtin.copy", T.anylist_getitem(r, T.int32(2))
            )

    assert_structural_equal(compiled(Before), Expected)


def test_kernel_of_the_module_is_called_directly() -> None:
    @I.ir_module
    class Before:
        @T.prim_func
        def shape_func(H: T.Buffer(T.int64(4), "int64")):
            T.func_attr({"global_symbol": "shape_func"})
            H[T.int64(0)] = H[T.int64(0)] + T.int64(1)

        @R.function
        def foo(x: R.Tensor):
            R.func_attr({"global_symbol": "foo"})
            _ = shape_func(x)
            return x

    @I.ir_module
    class Expected:
        @T.prim_func
        def shape_func(H: T.Buffer(T.int64(4), "int64")):
            T.func_attr({"global_symbol": "shape_func"})
            H[T.int64(0)] = H[T.int64(0)] + T.int64(1)

        @T.prim_func
        def __vmtir__foo(ctx_ptr: T.handle, r: T.handle, c: T.handle, f: T.handle):
            T.func_attr({"global_symbol": "__vmtir__foo"})
            # a call returning () uses no register; the null handle closes the cpacked call
            T.call_cpacked(
                "shape_func", T.anylist_getitem(r, T.int32(0)), T.reinterpret("handle", T.uint64(0))
            )
            T.anylist_setitem_call_packed(
                r, T.int32(1), "vm.builtin.copy", T.anylist_getitem(r, T.int32(0))
            )

    assert_structural_equal(compiled(Before), Expected)


def test_if_reads_its_condition_and_merges_both_branches() -> None:
    @I.ir_module
    class Before:
        @R.function
        def ife(cond: R.Tensor((), "bool"), x: R.Tensor) -> R.Tensor:
            R.func_attr({"global_symbol": "ife"})
            if cond:
                w = R.call_packed("test.vm.add", x, x, sinfo_args=(R.Tensor))
            else:
                w = R.call_packed("test.vm.mul", x, x, sinfo_args=(R.Tensor))
            return w

    @I.ir_module
    class Expected:
        @T.prim_func
        def __vmtir__ife(ctx_ptr: T.handle, r: T.handle, c: T.handle, f: T.handle):
            T.func_attr({"global_symbol": "__vmtir__ife"})
            # 0: cond, 1: x, 2: result, 3: the merge register, 4 / 5: each branch's call
            if T.cast(
                T.tvm_call_packed("vm.builtin.read_if_cond", T.anylist_getitem(r, T.int32(0))),
                "bool",
            ):
                T.anylist_setitem_call_packed(
                    r,
                    T.int32(4),
                    "test.vm.add",
                    T.anylist_getitem(r, T.int32(1)),
                    T.anylist_getitem(r, T.int32(1)),
                )
                T.anylist_setitem_call_packed(
                    r, T.int32(3), "vm.builtin.copy", T.anylist_getitem(r, T.int32(4))
                )
            else:
                T.anylist_setitem_call_packed(
                    r,
                    T.int32(5),
                    "test.vm.mul",
                    T.anylist_getitem(r, T.int32(1)),
                    T.anylist_getitem(r, T.int32(1)),
                )
                T.anylist_setitem_call_packed(
                    r, T.int32(3), "vm.builtin.copy", T.anylist_getitem(r, T.int32(5))
                )
            T.anylist_setitem_call_packed(
                r, T.int32(2), "vm.builtin.copy", T.anylist_getitem(r, T.int32(3))
            )

    assert_structural_equal(compiled(Before), Expected)


def test_constants_come_from_the_constant_list() -> None:
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor):
            R.func_attr({"global_symbol": "main"})
            y = R.const([1, 2])
            z = (y, R.const([3, 4]), x)
            return z

    @I.ir_module
    class Expected:
        @T.prim_func
        def __vmtir__main(ctx_ptr: T.handle, r: T.handle, c: T.handle, f: T.handle):
            T.func_attr({"global_symbol": "__vmtir__main"})
            T.anylist_setitem_call_packed(
                r,
                T.int32(2),
                "vm.builtin.make_tuple",
                T.anylist_getitem(c, T.int32(0)),
                T.anylist_getitem(c, T.int32(1)),
                T.anylist_getitem(r, T.int32(0)),
            )
            T.anylist_setitem_call_packed(
                r, T.int32(1), "vm.builtin.copy", T.anylist_getitem(r, T.int32(2))
            )

    builder = ExecBuilder()
    assert_structural_equal(vm_codegen(Before, "compiled", builder), Expected)
    assert [c.tolist() for c in builder.constants] == [[1, 2], [3, 4]]


def test_constant_as_a_packed_argument() -> None:
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor):
            R.func_attr({"global_symbol": "main"})
            y = R.const([1, 2])
            z = R.call_packed("test.vm.add", x, y, sinfo_args=(R.Tensor))
            return z

    @I.ir_module
    class Expected:
        @T.prim_func
        def __vmtir__main(ctx_ptr: T.handle, r: T.handle, c: T.handle, f: T.handle):
            T.func_attr({"global_symbol": "__vmtir__main"})
            T.anylist_setitem_call_packed(
                r, 2, "test.vm.add", T.anylist_getitem(r, 0), T.anylist_getitem(c, 0)
            )
            T.anylist_setitem_call_packed(r, 1, "vm.builtin.copy", T.anylist_getitem(r, 2))

    builder = ExecBuilder()
    assert_structural_equal(vm_codegen(Before, "compiled", builder), Expected)
    main = builder.functions[builder.index("main")]
    assert (main.kind, main.params, main.num_registers) == (FuncKind.VMTIR, ("x",), 3)


def test_a_structural_difference_is_caught() -> None:
    """The comparison above is not vacuous: another register number fails it."""

    @I.ir_module
    class Before:
        @R.function
        def foo(x: R.Tensor):
            R.func_attr({"global_symbol": "foo"})
            return x

    @I.ir_module
    class Wrong:
        @T.prim_func
        def __vmtir__foo(ctx_ptr: T.handle, r: T.handle, c: T.handle, f: T.handle):
            T.func_attr({"global_symbol": "__vmtir__foo"})
            T.anylist_setitem_call_packed(r, 2, "vm.builtin.copy", T.anylist_getitem(r, 0))

    try:
        assert_structural_equal(compiled(Before), Wrong)
    except AssertionError:
        return
    raise AssertionError("register 2 was accepted where register 1 is expected")
