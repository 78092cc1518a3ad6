# A mixed module: a PrimFunc called with call_tir from a relax function (cls.f), symbolic dims.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T


@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add_one(a: T.handle, b: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n,), "float32")
        for i in range(n):
            B[i] = A[i] + T.float32(1)

    @R.function
    def main(x: R.Tensor(("n",), "float32")) -> R.Tensor(("n",), "float32"):
        n = T.int64()
        cls = Module
        with R.dataflow():
            y = R.call_tir(cls.add_one, (x,), out_sinfo=R.Tensor((n,), "float32"))
            R.output(y)
        return y
