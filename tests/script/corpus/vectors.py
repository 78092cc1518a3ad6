# Vector loads/stores with Ramp, Broadcast and slices.
from kiln.script import tir as T


@T.prim_func
def vectors(A: T.Buffer((64,), "float32"), B: T.Buffer((8, 16), "float32"), n: T.int32):
    A[T.Ramp(0, 1, 4)] = A[T.Ramp(4, 1, 4)] + T.Broadcast(T.float32(1), 4)
    A[8:12] = A[12:16] * T.Broadcast(A[0], 4)
    A[n * 4 : n * 4 + 4] = A[0:4]
    A[16:24:2] = A[T.Ramp(32, 2, 4)]
    B[n, T.ramp(0, 1, 16)] = B[0, 0:16]
    for i in T.vectorized(4):
        A[40 + i] = T.float32(0)
