# match_cast defines new symbolic variables that later annotations use.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R
from kiln.script import tir as T


@R.function
def f(x: R.Tensor(ndim=2, dtype="float32")) -> R.Tensor(ndim=2, dtype="float32"):
    a = T.int64()
    b = T.int64()
    y = R.match_cast(x, R.Tensor((a, b), "float32"))
    z: R.Tensor((a, b), "float32") = R.exp(y)
    return z
