# nn.pad with a fill value, strided_slice with negative bounds, take over the flattened input.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import relax as R


@R.function
def f(x: R.Tensor((4, 6), "float32"), i: R.Tensor((2, 2), "int32")) -> R.Tensor((2, 2), "float32"):
    with R.dataflow():
        p = R.nn.pad(x, pad_width=[1, 1, 0, 2], pad_value=-1.0)
        s = R.strided_slice(p, axes=[0, 1], begin=[-3, 0], end=[6, -1], strides=[1, 3])
        t = R.take(s, i)
        R.output(t)
    return t
