# T.allocate returning a pointer, buffer views over it, and a nested with-form allocation.
# kiln-test: map_free_vars (T.Buffer views are undeclared buffers: free binders)
from kiln.script import tir as T


@T.prim_func
def views(A: T.Buffer((64,), "float32"), n: T.int32):
    A_flat = T.Buffer((8, 8), "float32", data=A.data)
    with T.allocate([16], "float32", "local") as tmp:
        tmp_buf = T.Buffer((16,), "float32", data=tmp, scope="local")
        tmp_buf[0] = A_flat[1, 2]
        A[0] = tmp_buf[0]
    work = T.allocate([n, 4], "int32", "shared", condition=n > 0, annotations={"note": 1})
    work_buf = T.Buffer((n, 4), "int32", data=work)
    work_buf[0, 0] = n
    A[1] = T.Cast("float32", work_buf[0, 0])
