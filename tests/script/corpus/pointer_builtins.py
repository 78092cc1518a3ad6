# Pointer builtins: address_of, tvm_access_ptr, type_annotation, isnullptr, likely, sync.
from kiln.script import tir as T


@T.prim_func
def pointers(A: T.Buffer((64,), "float32"), h: T.handle, n: T.int32):
    T.call_extern("int32", "copy", T.address_of(A[n]), T.address_of(A[0]))
    T.call_extern("int32", "use", T.tvm_access_ptr(T.type_annotation("float32"), A.data, 0, 64, 3))
    if T.isnullptr(h):
        T.evaluate(T.call_extern("int32", "abort"))
    if T.likely(n < 64):
        A[n] = T.float32(0)
    T.tvm_storage_sync("shared")
    T.tvm_storage_sync("global", True, 4)
