# int64 shapes and loop variables.
from kiln.script import tir as T


@T.prim_func
def wide(a: T.handle, n: T.int64):
    A = T.match_buffer(a, (n, T.int64(8)), "float32")
    for i in range(n):
        for j in T.serial(T.int64(8)):
            A[i, j] = T.Cast("float32", i * T.int64(8) + j)
    for i in range(T.int64(2), n):
        A[i, T.int64(0)] = A[i - T.int64(1), T.int64(0)]
