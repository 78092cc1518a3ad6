# Zero-dimensional buffers.
from kiln.script import tir as T


@T.prim_func
def scalar(A: T.Buffer((), "float32"), B: T.Buffer((), "float32")):
    B[()] = A[()] + T.float32(1)
