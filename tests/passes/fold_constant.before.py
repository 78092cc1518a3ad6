# RUN: kiln opt -p fold-constant %s
# A transpose (folded in numpy) and an add (folded by its host kernel) of constants become one
# constant; the matmul reads the variable x and stays.
# ruff: noqa: F841
from kiln.script import ir as I
from kiln.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")):
        with R.dataflow():
            t = R.permute_dims(R.const([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "float32"))
            s = R.add(t, R.const(1.0, "float32"))
            y = R.matmul(x, s)
            R.output(y)
        return y
