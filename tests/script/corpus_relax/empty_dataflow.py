# A dataflow block exporting nothing, and a function returning its parameter.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R


@R.function
def f(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
    with R.dataflow():
        unused = R.exp(x)
        R.output()
    return x
