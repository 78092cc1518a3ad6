# Compound symbolic dims: reshape to n * m, concat of n and n, slices of symbolic extents.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R
from kiln.script import tir as T


@R.function
def f(x: R.Tensor(("n", "m"), "float32")) -> R.Tensor(ndim=1, dtype="float32"):
    n = T.int64()
    m = T.int64()
    with R.dataflow():
        c: R.Tensor((n * 2, m), "float32") = R.concat((x, x), axis=0)
        r: R.Tensor((n * 2 * m,), "float32") = R.reshape(c, R.shape([n * 2 * m]))
        R.output(r)
    return r
