# Seed 000: an exposed function calling a private one through its GlobalVar.
from kiln.script import ir as I
from kiln.script import tir as T


@I.ir_module
class mod:
    @T.prim_func
    def main(A: T.Buffer(1, dtype="float32")):
        mod.subroutine(A.data)

    @T.prim_func(private=True)
    def subroutine(A_data: T.handle("float32")):
        A = T.decl_buffer(1, dtype="float32", data=A_data)
        A[0] = 42.0
