# A kernel with block/thread loops, a virtual thread and a launch inside.
from kiln.script import tir as T


@T.prim_func
def kernel(A: T.Buffer((256, 64), "float32"), B: T.Buffer((256, 64), "float32")):
    for bx in T.thread_binding(256, thread="blockIdx.x"):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            B[bx, tx] = A[bx, tx] * T.float32(2)
    for by in T.thread_binding(0, 4, "blockIdx.y", annotations={"pragma_auto_unroll": 16}):
        vt = T.launch_thread("vthread", 2)
        A[by, vt] = T.float32(1)
