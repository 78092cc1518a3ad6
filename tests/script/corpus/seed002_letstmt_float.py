# Seed 002: a host-side let bound with `with T.LetStmt(..., var=...)`, float callee.
from kiln.script import ir as I
from kiln.script import tir as T


@I.ir_module
class Module:
    @T.prim_func(private=True)
    def add(a: T.float32, b: T.float32) -> T.float32:
        return a + b

    @T.prim_func
    def main(
        A: T.Buffer((1024, 1024), "float32"),
        B: T.Buffer((1024, 1024), "float32"),
        C: T.Buffer((1024, 1024), "float32"),
    ):
        # bound temp var in host side
        temp_var = T.float32()
        with T.LetStmt(Module.add(T.float32(1), T.float32(2)), var=temp_var):
            for bx in T.thread_binding(1024, "blockIdx.x"):
                for tx in T.thread_binding(1024, "threadIdx.x"):
                    C[bx, tx] = Module.add(A[bx, tx], B[bx, tx]) + temp_var
