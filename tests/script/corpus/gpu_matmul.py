# A tiled GPU matmul: launch threads, shared memory, storage sync, unrolled inner loop.
from kiln.script import tir as T


@T.prim_func
def matmul(
    A: T.Buffer((1024, 1024), "float32"),
    B: T.Buffer((1024, 1024), "float32"),
    C: T.Buffer((1024, 1024), "float32"),
):
    T.func_attr({"tir.noalias": True})
    bx = T.launch_thread("blockIdx.x", 64)
    by = T.launch_thread("blockIdx.y", 64)
    tx = T.launch_thread("threadIdx.x", 16)
    ty = T.launch_thread("threadIdx.y", 16)
    A_sh = T.alloc_buffer((16, 16), "float32", scope="shared")
    B_sh = T.alloc_buffer((16, 16), "float32", scope="shared")
    acc = T.alloc_buffer((1,), "float32", scope="local")
    acc[0] = T.float32(0)
    for ko in range(64):
        A_sh[ty, tx] = A[by * 16 + ty, ko * 16 + tx]
        B_sh[ty, tx] = B[ko * 16 + ty, bx * 16 + tx]
        T.tvm_storage_sync("shared")
        for ki in T.unroll(16):
            acc[0] = acc[0] + A_sh[ty, ki] * B_sh[ki, tx]
        T.tvm_storage_sync("shared")
    C[by * 16 + ty, bx * 16 + tx] = acc[0]
