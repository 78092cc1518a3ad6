# Cast / T.cast / dtype constructors used as casts / reinterpret.
from kiln.script import tir as T


@T.prim_func
def casts(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "int32"), C: T.Buffer((8,), "uint8")):
    B[0] = T.Cast("int32", A[0])
    A[1] = T.cast(B[1], "float32")
    A[2] = T.float32(B[2])
    B[3] = T.int32(B[3])
    C[0] = T.Cast("uint8", B[4] % 256)
    B[5] = T.reinterpret("int32", A[5])
    A[6] = T.Cast("float32", T.Cast("float16", A[7]))
    B[6] = T.Cast("int32", T.Cast("int32", B[7]))
