# Let statements: annotated, unannotated, handle-typed, and a with-form in mid-block.
from kiln.script import tir as T


@T.prim_func
def lets(A: T.Buffer((16,), "float32"), n: T.int32):
    x: T.int32 = n * 2
    y = x + 1
    z: T.float32 = A[y]
    p: T.handle("float32") = T.address_of(A[0])
    T.call_extern("int32", "touch", p)
    q = T.int64()
    with T.LetStmt(T.Cast("int64", x), var=q):
        A[0] = T.Cast("float32", q)
    w = T.float32()
    with T.LetStmt(z + T.float32(1), var=w):
        A[1] = w
    A[2] = z + T.Cast("float32", y) + T.reinterpret("float32", T.Cast("int32", T.Cast("int64", n)))
