# An attribute on an explicit iter_var, and a while loop with a let in its body.
from kiln.script import tir as T


@T.prim_func
def iters(A: T.Buffer((16,), "int32"), n: T.int32):
    v = T.int32()
    with T.attr(T.iter_var(v, T.Range(0, 32), "ThreadIndex", "threadIdx.x"), "thread_extent", 16):
        A[v] = 1
    i = T.alloc_buffer((1,), "int32", scope="local")
    i[0] = 0
    while i[0] < n:
        j = i[0] * 2
        A[i[0]] = j
        i[0] = i[0] + 1
