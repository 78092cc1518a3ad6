# layer_norm over the last axis, softmax / log_softmax, dropout returning (output, mask).
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R


@R.function
def f(
    x: R.Tensor(("n", 64), "float32"), g: R.Tensor((64,), "float32"), b: R.Tensor((64,), "float32")
):
    with R.dataflow():
        ln = R.nn.layer_norm(x, g, b, axes=[-1], epsilon=1e-6)
        dr = R.nn.dropout(ln, rate=0.1)
        d = dr[0]
        s = R.nn.softmax(d, axis=1)
        ls = R.nn.log_softmax(d)
        out = (s, ls)
        R.output(out)
    return out
