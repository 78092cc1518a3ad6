# T.grid with three levels and a triangular loop nest that cannot be a grid.
from kiln.script import tir as T


@T.prim_func
def grid(A: T.Buffer((4, 8, 16), "float32"), B: T.Buffer((16, 16), "float32")):
    for i, j, k in T.grid(4, 8, 16):
        A[i, j, k] = T.float32(0)
    for i in range(16):
        for j in range(i):
            B[i, j] = B[j, i]
