# Grouped (depthwise) convolution, dilation, adaptive average pooling, global pooling.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R


@R.function
def f(x: R.Tensor((1, 4, 12, 12), "float32"), w: R.Tensor((4, 1, 3, 3), "float32")):
    with R.dataflow():
        d = R.nn.conv2d(x, w, groups=4, dilation=(2, 2), padding=(2, 2, 2, 2))
        a = R.nn.adaptive_avg_pool2d(d, output_size=(4, 3))
        g = R.nn.adaptive_avg_pool2d(a, output_size=1)
        R.output(g)
    return g
