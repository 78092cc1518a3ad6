# Let expressions and bitwise operations.
from kiln.script import tir as T


@T.prim_func
def let_expr(A: T.Buffer((8,), "int32"), n: T.int32):
    x = T.int32()
    A[0] = T.Let(x * x + x, where={x: n + 1})
    A[1] = (n & 7) | (n ^ 3)
    A[2] = (n << 2) >> 1
    A[3] = T.bitwise_not(n) + T.bitwise_and(n, 255) + T.shift_left(n, 1)
    A[4] = T.popcount(n)
