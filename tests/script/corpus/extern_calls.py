# call_extern / call_pure_extern / call_packed / call_cpacked / tvm_call_packed.
from kiln.script import tir as T


@T.prim_func
def calls(A: T.Buffer((16,), "float32"), h: T.handle, n: T.int32):
    T.call_extern("int32", "memset", A.data, 0, 64)
    A[0] = T.call_extern("float32", "my_fn", A[1], n, "flag")
    A[1] = T.call_pure_extern("float32", "expf", A[2])
    T.call_packed("runtime.print", h, n)
    T.call_cpacked("local_func", A.data, T.int64(16))
    T.tvm_call_packed("tvm.builtin.noop")
    T.evaluate(T.call_extern("handle", "get_ptr"))
