# A closure over a symbolic dim of its enclosing function, returned as a value.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R
from kiln.script import tir as T


@R.function
def outer(x: R.Tensor(("n",), "float32")):
    n = T.int64()

    @R.function
    def scale(v: R.Tensor((n,), "float32")) -> R.Tensor((n,), "float32"):
        w = R.multiply(v, x)
        return w

    y = scale(x)
    out = (y, scale)
    return out
