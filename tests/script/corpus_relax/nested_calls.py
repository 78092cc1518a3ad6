# Nested calls are bound one by one (A-normal form) when parsed.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R


@R.function
def f(x: R.Tensor((8,), "float32"), y: R.Tensor((8,), "float32")) -> R.Tensor((), "float32"):
    with R.dataflow():
        z = R.sum(R.multiply(R.add(x, y), R.nn.relu(R.subtract(x, y))))
        R.output(z)
    return z
