# Every unary operator, and the activations of R.nn.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R


@R.function
def f(x: R.Tensor((4, 4), "float32"), m: R.Tensor((4, 4), "bool")):
    with R.dataflow():
        a = R.exp(R.log(R.sqrt(R.rsqrt(R.abs(x)))))
        b = R.tanh(R.sigmoid(R.erf(R.sin(R.cos(a)))))
        c = R.floor(R.ceil(R.round(R.negative(b))))
        d = R.clip(c, -1.0, 1.0)
        e = R.nn.gelu(R.nn.gelu_tanh(R.nn.silu(R.nn.relu(d))))
        n = R.logical_not(m)
        k = R.isnan(e)
        i = R.astype(e, "int32")
        out = (e, n, k, i)
        R.output(out)
    return out
