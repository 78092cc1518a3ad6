# Buffer declarations with strides, alignment, offset factor, scope, separators.
from kiln.script import tir as T


@T.prim_func
def options(
    A: T.Buffer((16, 16), "float32", strides=(32, 1), align=16, offset_factor=4),
    B: T.Buffer((8,), "float16", scope="global.texture"),
    n: T.int32,
    c: T.handle,
):
    C = T.match_buffer(c, (n, 4), "int8", axis_separators=[1])
    for i in range(8):
        B[i] = T.Cast("float16", A[i, 2 * i])
    for i in range(n):
        C[i, 0] = T.int8(1)
