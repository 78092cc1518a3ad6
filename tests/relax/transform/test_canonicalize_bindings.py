"""CanonicalizeBindings: renaming bindings disappear (before / expected scripts)."""

# ruff: noqa: F841 - names in R scripts are script variables, not Python locals

from __future__ import annotations

from kiln.ir import assert_structural_equal
from kiln.relax.transform import CanonicalizeBindings
from kiln.script import ir as I
from kiln.script import relax as R


def test_aliases_tuple_fields_and_trivial_casts() -> None:
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            y = x
            z = R.exp(y)
            t = (z, x)
            w = t[0]
            c = R.match_cast(w, R.Tensor((4,), "float32"))
            v = R.add(c, y)
            return v

    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            z = R.exp(x)
            t = (z, x)
            v = R.add(z, x)
            return v

    assert_structural_equal(CanonicalizeBindings()(Before), Expected)


def test_output_of_a_dataflow_block_takes_over_the_binding() -> None:
    @I.ir_module
    class Before:
        @R.function
        def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            with R.dataflow():
                lv = R.exp(x)
                lv1 = R.negative(lv)
                gv = lv1
                R.output(gv)
            return gv

    @I.ir_module
    class Expected:
        @R.function
        def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            with R.dataflow():
                lv = R.exp(x)
                gv = R.negative(lv)
                R.output(gv)
            return gv

    after = CanonicalizeBindings()(Before)
    assert_structural_equal(after, Expected)
    assert CanonicalizeBindings()(after)["main"] is after["main"]
