# T.attr over buffers, variables, strings and numbers.
from kiln.script import tir as T


@T.prim_func
def attrs(A: T.Buffer((16,), "float32"), n: T.int32):
    with T.attr(A.data, "storage_alignment", 128):
        A[0] = T.float32(1)
    with T.attr(n, "pragma_loop", "unroll"):
        for i in range(n):
            A[i] = T.float32(2)
    with T.attr("default", "pragma_import_c", "int x = 1;"):
        with T.attr(0, "compute_scope", "main_compute"):
            A[1] = T.float32(3)
    with T.attr(A, "double_buffer_scope", 1):
        A[2] = T.float32(4)
