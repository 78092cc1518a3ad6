# Shape and prim values: R.Shape / R.Prim parameters, R.shape, R.prim_value, shape_of.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R
from kiln.script import tir as T


@R.function
def f(x: R.Tensor(("n", 2), "float32"), s: R.Shape(["a", "b"]), p: R.Prim("int64")) -> R.Tuple(
    R.Shape([2, 3]), R.Shape(ndim=2), R.Prim(value=7)
):
    n = T.int64()
    a = T.int64()
    b = T.int64()
    sh = R.shape([2, 3])
    got = R.shape_of(x)
    seven = R.prim_value(7)
    flat = R.reshape(x, s)
    out = (sh, got, seven)
    return out
