# Symbolic shapes bound by match_buffer; a grid loop over them.
from kiln.script import tir as T


@T.prim_func
def elementwise(a: T.handle, b: T.handle, c: T.handle):
    m = T.int32()
    n = T.int32()
    A = T.match_buffer(a, (m, n), "float32")
    B = T.match_buffer(b, (m, n), "float32")
    C = T.match_buffer(c, (m, n), "float32")
    for i, j in T.grid(m, n):
        C[i, j] = A[i, j] * B[i, j] + T.float32(1)
