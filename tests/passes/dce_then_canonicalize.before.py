# RUN: kiln opt -p dead-code-elimination,canonicalize-bindings %s
# The binding nothing reads (unused) and the function nothing calls (helper) go; then the renaming
# bindings: y = x, and z = a, whose output z takes over a's binding now that a has one use (in
# the other order a still has two uses when CanonicalizeBindings runs, and z = a stays).
# ruff: noqa: F841
from kiln.script import ir as I
from kiln.script import relax as R


@I.ir_module
class Module:
    @R.function(private=True)
    def helper(x: R.Tensor((4,), "float32")):
        return x

    @R.function
    def main(x: R.Tensor((4,), "float32")):
        with R.dataflow():
            y = x
            a = R.exp(y)
            unused = R.negative(a)
            z = a
            R.output(z)
        return z
