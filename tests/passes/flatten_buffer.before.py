# RUN: kiln opt -p flatten-buffer %s
# 2-D accesses of row-major (4, 8) buffers become 1-D accesses i * 8 + j of views of the same data.
from kiln.script import ir as I
from kiln.script import tir as T


@I.ir_module
class Module:
    @T.prim_func
    def main(a: T.Buffer((4, 8), "float32"), b: T.Buffer((4, 8), "float32")):
        for i, j in T.grid(4, 8):
            b[i, j] = a[i, j] * T.float32(2)
