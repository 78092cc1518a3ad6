# if / elif / else, while over an allocated counter, nested conditions.
from kiln.script import tir as T


@T.prim_func
def control(A: T.Buffer((16,), "int32"), n: T.int32):
    if n > 8:
        A[0] = 1
    elif n == 8:
        A[0] = 2
    elif n != 3 or n < 0:
        A[0] = 3
    else:
        A[0] = 4
    if not (n >= 2):
        A[1] = 5
    counter = T.alloc_buffer((1,), "int32", scope="local")
    counter[0] = 0
    while counter[0] < n:
        A[counter[0]] = counter[0] * counter[0]
        counter[0] = counter[0] + 1
