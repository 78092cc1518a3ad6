# T.ret written explicitly (T.evaluate of a ret) and a float-returning callee.
from kiln.script import ir as I
from kiln.script import tir as T


@I.ir_module
class Module:
    @T.prim_func(private=True)
    def twice(x: T.int64) -> T.int64:
        T.evaluate(T.ret(x * T.int64(2)))

    @T.prim_func(private=True)
    def inferred(x: T.float32) -> T.float32:
        return T.sqrt(x)

    @T.prim_func
    def main(A: T.Buffer((2,), "float32"), n: T.int64):
        A[0] = Module.inferred(A[1])
        A[1] = T.Cast("float32", Module.twice(n))
