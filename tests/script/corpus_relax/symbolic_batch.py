# Symbolic dims declared as strings in the signature and as n = T.int64() in the body.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R
from kiln.script import tir as T


@R.function
def f(x: R.Tensor(("n", "m"), "float32"), y: R.Tensor(("m",), "float32")) -> R.Tensor(
    ("n",), "float32"
):
    n = T.int64()
    m = T.int64()
    with R.dataflow():
        s: R.Tensor((n, m), "float32") = R.multiply(x, y)
        r: R.Tensor((n,), "float32") = R.sum(s, axis=[1])
        R.output(r)
    return r
