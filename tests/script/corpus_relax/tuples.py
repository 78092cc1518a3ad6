# Tuples: tuple parameters, indexing, nesting, a tuple result, the empty tuple.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R


@R.function
def f(
    t: R.Tuple(R.Tensor((2, 3), "float32"), R.Tuple(R.Tensor((3,), "float32"), R.Object)),
) -> R.Tuple(R.Tensor((2, 3), "float32"), R.Tuple()):
    a = t[0]
    inner = t[1]
    b = inner[0]
    c = R.add(a, b)
    e = R.tuple()
    out = (c, e)
    return out
