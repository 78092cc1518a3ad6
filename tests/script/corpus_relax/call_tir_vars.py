# call_tir with tir_vars (a symbolic value the PrimFunc cannot read from its buffers).
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T


@I.ir_module
class Module:
    @T.prim_func(private=True)
    def fill(out: T.handle, m: T.int64):
        O = T.match_buffer(out, (m,), "float32")
        for i in range(m):
            O[i] = T.Cast("float32", i)

    @R.function
    def main(x: R.Tensor(("m",), "float32")) -> R.Tensor(("m",), "float32"):
        m = T.int64()
        cls = Module
        y = R.call_tir(cls.fill, (), out_sinfo=R.Tensor((m,), "float32"), tir_vars=R.shape([m]))
        return y
