# A load with an explicit dtype (vload).
from kiln.script import tir as T


@T.prim_func
def vload(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    B[0:4] = A.vload((0,), "float32x4")
    B[4:8] = B.vload((8,), "float32x4")
