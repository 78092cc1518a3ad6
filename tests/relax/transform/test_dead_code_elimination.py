"""DeadCodeElimination: unused pure bindings and unreachable functions go; effects stay."""

# ruff: noqa: F841 - names in R scripts are script variables, not Python locals

from __future__ import annotations

from kiln.ir import assert_structural_equal
from kiln.relax.transform import DeadCodeElimination
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T


def test_unused_bindings_and_functions_are_removed() -> None:
    @I.ir_module
    class Before:
        @T.prim_func(private=True)
        def unused_kernel(a: T.Buffer((4,), "float32")):
            a[0] = T.float32(0)

        @T.prim_func(private=True)
        def kernel(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):
            for i in range(4):
                b[i] = a[i]

        @R.function(private=True)
        def unused_helper(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            return x

        @R.function(pure=False)
        def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            cls = Before
            with R.dataflow():
                a = R.exp(x)
                b = R.add(a, x)
                c = R.call_tir(cls.kernel, (x,), out_sinfo=R.Tensor((4,), "float32"))
                R.output(c)
            R.call_packed("effect", x, sinfo_args=(R.Tuple()))
            d = R.negative(c)
            return c

    @I.ir_module
    class Expected:
        @T.prim_func(private=True)
        def kernel(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):
            for i in range(4):
                b[i] = a[i]

        @R.function(pure=False)
        def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            cls = Expected
            with R.dataflow():
                c = R.call_tir(cls.kernel, (x,), out_sinfo=R.Tensor((4,), "float32"))
                R.output(c)
            R.call_packed("effect", x, sinfo_args=(R.Tuple()))
            return c

    assert_structural_equal(DeadCodeElimination()(Before), Expected)


def test_entry_functions_can_be_named() -> None:
    @I.ir_module
    class Module:
        @R.function(private=True)
        def keep(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
            return x

        @R.function
        def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
            return x

    out = DeadCodeElimination(entry_functions=["keep"])(Module)
    assert [gv.name_hint for gv in out] == ["keep"]


def test_a_match_cast_that_defines_dims_stays_though_its_var_is_unused() -> None:
    @I.ir_module
    class Before:
        @R.function
        def main(s: R.Tensor((1,), "int64")) -> R.Tensor(ndim=1, dtype="float32"):
            n = T.int64()
            with R.dataflow():
                shape = R.call_pure_packed(
                    "vm.builtin.tensor_to_shape", s, sinfo_args=(R.Shape(ndim=1),)
                )
                dims = R.match_cast(shape, R.Shape([n]))
                unused = R.match_cast(s, R.Tensor((1,), "int64"))
                y = R.zeros(R.shape([n]), "float32")
                R.output(y)
            return y

    after = DeadCodeElimination()(Before)
    bindings = after["main"].body.blocks[0].bindings
    assert [b.var.name_hint for b in bindings] == ["shape", "dims", "y"]
