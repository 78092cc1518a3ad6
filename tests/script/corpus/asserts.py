# assert statements (flat) and T.Assert (with-form in the middle of a block).
from kiln.script import tir as T


@T.prim_func
def checks(A: T.Buffer((16,), "float32"), n: T.int32):
    with T.Assert(n > 0, "n must be positive"):
        A[0] = T.float32(1)
    assert n <= 16, "n is at most 16"
    assert 0 <= n and n < 100, "bounded"
    for i in range(n):
        A[i] = T.float32(0)
