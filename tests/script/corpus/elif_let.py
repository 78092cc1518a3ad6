# elif chains, including a condition that needs a declaration (printed as else: if).
from kiln.script import tir as T


@T.prim_func
def branches(A: T.Buffer((4,), "int32"), n: T.int32):
    x = T.int32()
    if n > 0:
        A[0] = 1
    elif T.Let(x * 2, where={x: n}) > 3:
        A[0] = 2
    elif n == -5:
        A[0] = 4
    else:
        A[0] = 3
