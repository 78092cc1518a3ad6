# Functions returning scalars, and their callers.
from kiln.script import ir as I
from kiln.script import tir as T


@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((4,), "float32"), n: T.int64):
        A[0] = Module.scale(A[1], T.float32(2))
        A[1] = T.Cast("float32", Module.clamp(n))
        Module.log_it(n)

    @T.prim_func(private=True)
    def scale(x: T.float32, s: T.float32) -> T.float32:
        return x * s

    @T.prim_func(private=True)
    def clamp(v: T.int64) -> T.int64:
        return T.if_then_else(v < T.int64(0), T.int64(0), v)

    @T.prim_func(private=True)
    def log_it(v: T.int64):
        T.call_extern("int32", "printf", "%lld\n", v)
