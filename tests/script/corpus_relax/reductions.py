# Reductions with axes and keepdims, argmax / argmin, variance and prod.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R
from kiln.script import tir as T


@R.function
def f(x: R.Tensor(("n", 5, 6), "float32")):
    n = T.int64()
    with R.dataflow():
        s = R.sum(x, axis=[1, 2])
        m = R.mean(x, axis=1, keepdims=True)
        mx = R.max(x)
        mn = R.min(x, axis=-1)
        p = R.prod(x, axis=[0])
        v = R.variance(x, axis=[2], keepdims=True)
        am = R.argmax(x, axis=1)
        an = R.argmin(x)
        out = (s, m, mx, mn, p, v, am, an)
        R.output(out)
    return out
