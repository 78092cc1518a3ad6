# ruff: noqa: F841
from kiln.script import ir as I
from kiln.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), "float32")):
        with R.dataflow():
            z = R.exp(x)
            R.output(z)
        return z
