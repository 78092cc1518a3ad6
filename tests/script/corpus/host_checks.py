# A host function in the style MakePackedAPI produces: argument checks and a packed call.
from kiln.script import tir as T


@T.prim_func
def host(args: T.handle, num_args: T.int32, out: T.handle):
    assert num_args == 2, "main: expected 2 arguments"
    arg0: T.handle = T.tvm_struct_get(args, 0, 12, "handle")
    assert not T.isnullptr(arg0), "main: argument 0 must not be NULL"
    ndim: T.int32 = T.tvm_struct_get(arg0, 0, 5, "int32")
    assert ndim == 1, "main: argument 0 must be 1-d"
    data: T.handle("float32") = T.tvm_struct_get(arg0, 0, 1, "handle")
    T.call_packed("kernel_launch", data, T.int64(128))
