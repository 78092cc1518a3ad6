# Shapes from module-level Python constants; dtype strings from a constant too.
from kiln.script import tir as T

M, K = 16, 32
DTYPE = "float16"


@T.prim_func
def gemv(A: T.Buffer((M, K), DTYPE), x: T.Buffer((K,), DTYPE), y: T.Buffer((M,), "float32")):
    for i in range(M):
        y[i] = T.float32(0)
        for k in range(K):
            y[i] = y[i] + T.Cast("float32", A[i, k] * x[k])
