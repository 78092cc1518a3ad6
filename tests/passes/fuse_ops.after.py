# The callees' result types are written out: main is parsed before them.
# ruff: noqa: F841
from kiln.script import ir as I
from kiln.script import relax as R


@I.ir_module
class Module:
    @R.function
    def main(
        x: R.Tensor((4, 8), "float32"),
        y: R.Tensor((4, 8), "float32"),
        w: R.Tensor((8, 4), "float32"),
    ):
        cls = Module
        with R.dataflow():
            c = cls.fused_add_exp_sum(x, y)
            r = cls.fused_matmul_relu(x, w)
            out = (c, r)
            R.output(out)
        return out

    @R.function(private=True)
    def fused_add_exp_sum(
        x: R.Tensor((4, 8), "float32"), y: R.Tensor((4, 8), "float32")
    ) -> R.Tensor((4,), "float32"):
        R.func_attr({"Primitive": 1})
        with R.dataflow():
            a = R.add(x, y)
            b = R.exp(a)
            c = R.sum(b, axis=[1])
            R.output(c)
        return c

    @R.function(private=True)
    def fused_matmul_relu(
        x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 4), "float32")
    ) -> R.Tensor((4, 4), "float32"):
        R.func_attr({"Primitive": 1})
        with R.dataflow():
            m = R.matmul(x, w)
            r = R.nn.relu(m)
            R.output(r)
        return r
