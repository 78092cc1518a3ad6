# Creation operators: full, zeros, ones, the *_like family and arange (constant and symbolic).
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R
from kiln.script import tir as T


@R.function
def f(x: R.Tensor(("n", 3), "float32")):
    n = T.int64()
    with R.dataflow():
        a = R.full(R.shape([n, 3]), R.const(1.5, "float32"))
        z = R.zeros(R.shape([2, n]), "int32")
        o = R.ones(R.shape([4]), "float16")
        fl = R.full_like(x, R.const(2, "int32"), dtype="int32")
        zl = R.zeros_like(x)
        ol = R.ones_like(x, dtype="float64")
        r = R.arange(0, 10, 2)
        rs = R.arange(R.prim_value(0), R.prim_value(n), R.prim_value(1))
        rf = R.arange(0.0, 1.0, 0.25)
        out = (a, z, o, fl, zl, ol, r, rs, rf)
        R.output(out)
    return out
