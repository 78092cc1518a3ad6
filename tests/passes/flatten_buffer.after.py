from kiln.script import ir as I
from kiln.script import tir as T


@I.ir_module
class Module:
    @T.prim_func
    def main(a: T.Buffer((4, 8), "float32"), b: T.Buffer((4, 8), "float32")):
        a_flat = T.Buffer((32,), "float32", data=a.data)
        b_flat = T.Buffer((32,), "float32", data=b.data)
        for i, j in T.grid(4, 8):
            b_flat[i * 8 + j] = a_flat[i * 8 + j] * T.float32(2)
