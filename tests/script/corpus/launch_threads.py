# Several launch_thread frames flat, then one in the middle of a block.
from kiln.script import tir as T


@T.prim_func
def launch(A: T.Buffer((1024,), "float32"), B: T.Buffer((32,), "float32")):
    tx = T.env_thread("threadIdx.x")
    with T.launch_thread(tx, 32):
        B[tx] = T.float32(0)
    bx = T.launch_thread("blockIdx.x", 32)
    ty = T.launch_thread("threadIdx.x", 32)
    A[bx * 32 + ty] = A[bx * 32 + ty] + B[ty]
