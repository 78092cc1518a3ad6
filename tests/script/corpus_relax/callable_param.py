# A function-valued parameter (R.Callable) called inside the body.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R


@R.function
def apply(
    g: R.Callable((R.Tensor((2,), "float32"),), R.Tensor((2,), "float32"), True),
    x: R.Tensor((2,), "float32"),
) -> R.Tensor((2,), "float32"):
    y = g(x)
    z = g(y)
    return z
