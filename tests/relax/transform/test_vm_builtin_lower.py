"""VMBuiltinLower: allocations, shape_of and call_pure_packed become VM builtin calls (the names
come from the runtime's table); an operator with no VM lowering is an error naming the pass
that should have removed it."""

# ruff: noqa: F821, F841 - names in R scripts are script variables, not Python names

from __future__ import annotations

import pytest

from kiln.errors import PassError
from kiln.ir.structural import assert_structural_equal
from kiln.relax.transform import VMBuiltinLower
from kiln.script import ir as I
from kiln.script import relax as R


def test_allocations_shape_of_and_pure_packed_calls() -> None:
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            s = R.memory.alloc_storage(
                R.shape([16]), R.prim_value(0), R.str("global"), R.dtype("uint8")
            )
            a = R.memory.alloc_tensor(s, R.prim_value(0), R.shape([4]), R.dtype("float32"))
            b = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0))
            k = R.shape_of(x)
            p = R.call_pure_packed("my.f", a, b, sinfo_args=R.Tensor((4,), "float32"))
            return (p, k)

    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            s = R.call_builtin_with_ctx(
                R.ExternFunc("vm.builtin.alloc_storage"),
                (R.shape([16]), R.prim_value(0), R.dtype("uint8"), R.str("global")),
                sinfo_args=R.Object,
            )
            a = R.call_packed(
                "vm.builtin.alloc_tensor",
                s,
                R.prim_value(0),
                R.shape([4]),
                R.dtype("float32"),
                sinfo_args=R.Tensor((4,), "float32"),
            )
            b = R.call_builtin_with_ctx(
                R.ExternFunc("vm.builtin.empty"),
                (R.shape([4]), R.dtype("float32"), R.prim_value(0)),
                sinfo_args=R.Tensor((4,), "float32"),
            )
            k = R.call_packed("vm.builtin.shape_of", x, sinfo_args=R.Shape([4]))
            p = R.call_packed("my.f", a, b, sinfo_args=R.Tensor((4,), "float32"))
            return (p, k)

    assert_structural_equal(VMBuiltinLower()(Before), Expected)


def test_an_operator_without_vm_lowering_names_the_missing_pass() -> None:
    @I.ir_module
    class Unlegalized:
        @R.function
        def main(x: R.Tensor((4,), "float32")):
            y = R.exp(x)
            return y

    with pytest.raises(PassError, match=r"relax.exp has no VM lowering; LegalizeOps"):
        VMBuiltinLower()(Unlegalized)
