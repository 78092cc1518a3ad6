# A module whose functions call later-defined functions; module attributes.
from kiln.script import ir as I
from kiln.script import tir as T


@I.ir_module
class Module:
    I.module_attrs({"system_lib_prefix": "lib_", "version": 2})

    @T.prim_func
    def main(A: T.Buffer((16,), "float32")):
        Module.first(A.data, 16)
        A[0] = Module.second(A[1])

    @T.prim_func(private=True)
    def first(ptr: T.handle("float32"), n: T.int32):
        B = T.decl_buffer((16,), "float32", data=ptr)
        for i in range(n):
            B[i] = Module.second(B[i])

    @T.prim_func(private=True)
    def second(x: T.float32) -> T.float32:
        return Module.third(x) * T.float32(2)

    @T.prim_func(private=True)
    def third(x: T.float32) -> T.float32:
        return x + T.float32(1)
