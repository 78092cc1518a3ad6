# If branches with different shapes join to a rank-only struct info; the condition is computed.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R


@R.function
def f(x: R.Tensor((4,), "float32"), y: R.Tensor((6,), "float32")) -> R.Tensor(
    ndim=1, dtype="float32"
):
    s = R.sum(x)
    zero = R.const(0.0, "float32")
    c = R.greater(s, zero)
    if c:
        r = R.exp(x)
    else:
        r = R.exp(y)
    return r
