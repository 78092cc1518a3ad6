# A CPU row reduction: parallel outer loop, local accumulator, vectorized tail.
from kiln.script import tir as T


@T.prim_func
def row_sum(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n, 128), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for i in T.parallel(n):
        acc = T.decl_buffer((4,), "float32", scope="local")
        acc[0:4] = T.Broadcast(T.float32(0), 4)
        for k in range(32):
            acc[0:4] = acc[0:4] + A[i, k * 4 : k * 4 + 4]
        total = acc[0] + acc[1] + acc[2] + acc[3]
        B[i] = T.max(total, T.float32(0))
