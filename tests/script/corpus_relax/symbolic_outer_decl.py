# A symbolic variable declared at module level (n = T.int64()) and used in annotations.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T

n = T.int64()


@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((n, 4), "float32")) -> R.Tensor(ndim=1, dtype="float32"):
        y: R.Tensor((n * 4,), "float32") = R.reshape(x, R.shape([n * 4]))
        return y
