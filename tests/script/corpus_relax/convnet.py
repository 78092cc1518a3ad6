# A small convolutional network with symbolic batch: conv2d, batch_norm, pools, flatten, linear.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R
from kiln.script import tir as T


@R.function
def net(
    x: R.Tensor(("b", 3, 16, 16), "float32"),
    w: R.Tensor((8, 3, 3, 3), "float32"),
    gamma: R.Tensor((8,), "float32"),
    beta: R.Tensor((8,), "float32"),
    mean: R.Tensor((8,), "float32"),
    var: R.Tensor((8,), "float32"),
    fc: R.Tensor((10, 128), "float32"),
) -> R.Tensor(("b", 10), "float32"):
    b = T.int64()
    with R.dataflow():
        c = R.nn.conv2d(x, w, strides=1, padding=1)
        bn = R.nn.batch_norm(c, gamma, beta, mean, var, axis=1, epsilon=1e-3)
        y = bn[0]
        a = R.nn.relu(y)
        p = R.nn.max_pool2d(a, pool_size=(2, 2), strides=(2, 2))
        q = R.nn.avg_pool2d(p, pool_size=(2, 2), strides=(2, 2), count_include_pad=True)
        f = R.reshape(q, R.shape([b, 128]))
        o = R.linear(f, fc)
        R.output(o)
    return o
