# Two dataflow blocks with an ordinary binding between them.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R


@R.function(pure=False)
def f(x: R.Tensor((3,), "float32")) -> R.Tensor((3,), "float32"):
    with R.dataflow():
        a = R.exp(x)
        b = R.add(a, x)
        R.output(b)
    R.call_packed("my.log", b, sinfo_args=(R.Tuple()))
    with R.dataflow():
        c = R.multiply(b, b)
        d = R.negative(c)
        R.output(d)
    return d
