# Rank-only and unknown shapes: ops keep what can be known (dtype, rank).
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R


@R.function
def f(x: R.Tensor(ndim=3, dtype="float32"), y: R.Tensor(dtype="float32"), z: R.Tensor):
    a = R.add(x, x)
    b = R.sum(a, axis=[1])
    c = R.nn.relu(y)
    d = R.permute_dims(z)
    out = (b, c, d)
    return out
