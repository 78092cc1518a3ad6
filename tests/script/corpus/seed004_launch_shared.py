# Seed 004: a launch_thread region with two shared.dyn buffers.
from kiln.script import tir as T


@T.prim_func
def main(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
    threadIdx_x = T.launch_thread("threadIdx.x", 128)
    A_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
    B_sh = T.alloc_buffer((128,), "float32", scope="shared.dyn")
    A_sh[threadIdx_x] = A[threadIdx_x]
    B_sh[threadIdx_x] = A_sh[threadIdx_x] + T.float32(1)
    B[threadIdx_x] = B_sh[threadIdx_x]
