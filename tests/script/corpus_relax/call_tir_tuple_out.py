# call_tir producing two outputs (a list of out_sinfo), unpacked by indexing.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T


@I.ir_module
class Module:
    @T.prim_func(private=True)
    def split2(
        a: T.Buffer((4,), "float32"), b: T.Buffer((2,), "float32"), c: T.Buffer((2,), "float32")
    ):
        for i in range(2):
            b[i] = a[i]
            c[i] = a[i + 2]

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((2,), "float32"):
        cls = Module
        t = R.call_tir(
            cls.split2, (x,), out_sinfo=[R.Tensor((2,), "float32"), R.Tensor((2,), "float32")]
        )
        lo = t[0]
        hi = t[1]
        s = R.add(lo, hi)
        return s
