# Builtins whose dtype comes last (tvm_struct_get) and the generic T.call_intrin.
from kiln.script import tir as T


@T.prim_func
def structs(args: T.handle, A: T.Buffer((4,), "int32")):
    data: T.handle = T.tvm_struct_get(args, 0, 1, "handle")
    A[0] = T.tvm_struct_get(args, 1, 4, "int32")
    T.tvm_struct_set(args, 0, 1, data)
    A[1] = T.call_intrin("int32", "tir.popcount", A[2])
    A[2] = T.call_intrin("int32", "tir.likely", A[3])
    stack: T.handle = T.tvm_stack_alloca("array", 1)
    T.call_intrin("handle", "tir.tvm_throw_last_error")
    T.evaluate(T.handle_add_byte_offset(stack, 16))
