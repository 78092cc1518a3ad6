# Data movement: permute_dims, reshape with -1, expand_dims, squeeze, flatten, concat, split,
# strided_slice, take, broadcast_to.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R
from kiln.script import tir as T


@R.function
def f(x: R.Tensor(("n", 4, 1), "float32"), idx: R.Tensor((3,), "int64")):
    n = T.int64()
    with R.dataflow():
        t = R.permute_dims(x, axes=[1, 0, 2])
        r = R.reshape(x, R.shape([-1, 2]))
        e = R.expand_dims(x, axis=[0])
        s = R.squeeze(x, axis=[2])
        fl = R.flatten(x)
        c = R.concat((s, s), axis=0)
        parts = R.split(c, indices_or_sections=2, axis=1)
        left = parts[0]
        sl = R.strided_slice(s, axes=[1], begin=[1], end=[4], strides=[2])
        tk = R.take(s, idx, axis=1)
        b = R.broadcast_to(x, R.shape([2, n, 4, 3]))
        out = (t, r, e, fl, left, sl, tk, b)
        R.output(out)
    return out
