# Variables sharing a name get unique names when printed.
from kiln.script import tir as T


@T.prim_func
def siblings(A: T.Buffer((8, 8), "float32")):
    for i in range(8):
        for j in range(8):
            A[i, j] = T.float32(0)
    for i in range(8):
        x: T.float32 = A[i, 0]
        for j in range(8):
            A[i, j] = x
    for i in range(4):
        x: T.float32 = A[0, i]
        A[1, i] = x
