# Every loop kind, loops not starting at zero, annotations.
from kiln.script import tir as T


@T.prim_func
def loops(A: T.Buffer((64,), "float32"), n: T.int32):
    for i in T.serial(4):
        A[i] = T.float32(0)
    for i in T.parallel(8):
        A[i] = A[i] + T.float32(1)
    for i in T.vectorized(4, 8):
        A[i] = A[i] * T.float32(2)
    for i in T.unroll(2, n):
        A[i] = A[i] - T.float32(3)
    for i in T.serial(n, n + 8, annotations={"pragma_unroll": 1, "note": "x"}):
        A[i] = T.float32(4)
    for i in range(10, 20):
        A[i] = T.float32(5)
    for i in range(n, 64):
        A[i] = T.float32(6)
