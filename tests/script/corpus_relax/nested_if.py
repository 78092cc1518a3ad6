# elif chains: a nested If in the else branch; branch-local bindings.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R


@R.function
def pick(
    c1: R.Tensor((), "bool"), c2: R.Tensor((), "bool"), x: R.Tensor((3,), "float32")
) -> R.Tensor((3,), "float32"):
    if c1:
        a = R.exp(x)
        r = R.add(a, x)
    elif c2:
        r = R.negative(x)
    else:
        r = x
    return r
