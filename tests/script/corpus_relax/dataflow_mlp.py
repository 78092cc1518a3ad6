# A two-layer perceptron in a dataflow block: matmul, bias, relu, softmax.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R


@R.function
def mlp(
    x: R.Tensor((8, 16), "float32"),
    w1: R.Tensor((16, 32), "float32"),
    b1: R.Tensor((32,), "float32"),
    w2: R.Tensor((32, 10), "float32"),
) -> R.Tensor((8, 10), "float32"):
    with R.dataflow():
        h = R.matmul(x, w1)
        h1 = R.add(h, b1)
        a = R.nn.relu(h1)
        o = R.matmul(a, w2)
        p = R.nn.softmax(o, axis=-1)
        R.output(p)
    return p
