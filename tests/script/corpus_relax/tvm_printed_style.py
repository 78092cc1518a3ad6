# The forms TVM's printer writes: dtype= keywords, every attribute spelled out ("void" dtypes,
# layouts), attributes as prim values, R.shape arguments, cls = Module.
# ruff: noqa: E501, F821, F841 - script text: names are script variables
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T


@I.ir_module
class Module:
    @R.function
    def main(
        x: R.Tensor(("n", 3, 8, 8), dtype="float32"), w: R.Tensor((4, 3, 3, 3), dtype="float32")
    ) -> R.Tensor(("n", 4, 3, 3), dtype="float32"):
        n = T.int64()
        R.func_attr({"global_symbol": "main"})
        cls = Module
        with R.dataflow():
            lv: R.Tensor((n, 4, 6, 6), dtype="float32") = R.nn.conv2d(
                x,
                w,
                strides=[1, 1],
                padding=[0, 0, 0, 0],
                dilation=[1, 1],
                groups=1,
                data_layout="NCHW",
                kernel_layout="OIHW",
                out_layout="NCHW",
                out_dtype="void",
            )
            lv1: R.Tensor((n, 4, 6, 6), dtype="float32") = R.clip(
                lv, R.prim_value(0), R.prim_value(6)
            )
            lv2: R.Tensor((n, 4, 3, 3), dtype="float32") = R.nn.max_pool2d(
                lv1,
                pool_size=[2, 2],
                strides=[2, 2],
                dilation=[1, 1],
                padding=[0, 0, 0, 0],
                ceil_mode=False,
                count_include_pad=False,
                layout="NCHW",
                out_layout="NCHW",
            )
            lv3: R.Tensor((n, 4, 3, 3), dtype="float32") = R.strided_slice(
                lv2,
                (R.prim_value(1),),
                (R.prim_value(0),),
                (R.prim_value(4),),
                (R.prim_value(1),),
                assume_inbound=False,
            )
            gv: R.Tensor((n, 4, 3, 3), dtype="float32") = R.nn.softmax(lv3, axis=-1)
            R.output(gv)
        return gv
