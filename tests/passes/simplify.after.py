from kiln.script import ir as I
from kiln.script import tir as T


@I.ir_module
class Module:
    @T.prim_func
    def main(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
        for f in range(64):
            b[f] = a[f] * T.float32(1)
