# RUN: kiln opt -p fuse-ops %s
# An element-wise chain with the reduction it feeds is one group; a matmul (an anchor) takes its
# element-wise epilogue (relu) in a second group.
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
        with R.dataflow():
            a = R.add(x, y)
            b = R.exp(a)
            c = R.sum(b, axis=1)
            m = R.matmul(x, w)
            r = R.nn.relu(m)
            out = (c, r)
            R.output(out)
        return out
