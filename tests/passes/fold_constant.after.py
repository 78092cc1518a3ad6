# [[1, 2, 3], [4, 5, 6]] transposed is [[1, 4], [2, 5], [3, 6]]; plus one.
# ruff: noqa: F841
from kiln.script import ir as I
from kiln.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")):
        with R.dataflow():
            y = R.matmul(x, R.const([[2.0, 5.0], [3.0, 6.0], [4.0, 7.0]], "float32"))
            R.output(y)
        return y
