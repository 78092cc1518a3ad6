# A larger mixed module: two PrimFuncs (one calling the other), call_tir, relax calls.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T


@I.ir_module
class Module:
    @T.prim_func(private=True)
    def scale(x: T.float32) -> T.float32:
        return x * T.float32(2)

    @T.prim_func(private=True)
    def double(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "float32")):
        for i in range(8):
            b[i] = Module.scale(a[i])

    @R.function(private=True)
    def body(x: R.Tensor((8,), "float32")) -> R.Tensor((8,), "float32"):
        cls = Module
        y = R.call_tir(cls.double, (x,), out_sinfo=R.Tensor((8,), "float32"))
        z = R.nn.relu(y)
        return z

    @R.function
    def main(x: R.Tensor((8,), "float32")) -> R.Tensor((8,), "float32"):
        cls = Module
        with R.dataflow():
            a = R.exp(x)
            R.output(a)
        b = cls.body(a)
        c = cls.body(b)
        return c
