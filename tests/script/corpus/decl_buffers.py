# decl_buffer with and without data=, alloc_buffer in the middle of a block (with-form).
from kiln.script import tir as T


@T.prim_func
def decls(A: T.Buffer((32,), "float32")):
    with T.alloc_buffer((4, 4), "float32", scope="local") as acc:
        acc[0, 0] = A[0]
        A[1] = acc[0, 0]
    with T.decl_buffer((32,), "float32", data=A.data) as A_alias:
        A_alias[2] = A[3]
    tmp = T.decl_buffer((8,), "int32")
    tmp[0] = 1
    view = T.decl_buffer((2, 4), "int32", data=tmp.data)
    view[1, 1] = tmp[0]
