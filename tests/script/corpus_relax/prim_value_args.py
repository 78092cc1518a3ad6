# Prim values bound to names, used as arguments of a packed call and of arange.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R
from kiln.script import tir as T


@R.function
def f(x: R.Tensor(("n",), "float32"), kp: R.Prim(value="k")):
    n = T.int64()
    k = T.int64()
    half = R.prim_value(n // 2)
    r = R.arange(R.prim_value(0), half, R.prim_value(1))
    kk = R.arange(R.prim_value(k))
    out = (r, kk)
    return out
