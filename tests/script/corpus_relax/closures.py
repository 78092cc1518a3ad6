# A local function (closure) capturing an outer variable, called twice.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R


@R.function
def outer(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
    @R.function
    def add_y(z: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        s = R.add(z, y)
        return s

    a = add_y(x)
    b = add_y(a)
    return b
