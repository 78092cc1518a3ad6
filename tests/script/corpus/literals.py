# Typed literals: int8..uint64, float16/64, bool, inf/nan, large ints.
from kiln.script import tir as T


@T.prim_func
def literals(
    A: T.Buffer((4,), "int64"),
    B: T.Buffer((4,), "uint64"),
    C: T.Buffer((4,), "float64"),
    D: T.Buffer((4,), "float16"),
    E: T.Buffer((4,), "bool"),
    F: T.Buffer((4,), "int8"),
):
    A[0] = T.int64(0)
    A[1] = T.int64(1) + T.int64(2)
    A[2] = T.int64(5000000000)
    A[3] = A[0] * -1
    B[0] = T.uint64(0)
    B[1] = T.uint64(18446744073709551615)
    C[0] = T.float64("inf")
    C[1] = T.float64("-inf")
    C[2] = T.float64("nan")
    C[3] = T.float64(1e-300) / C[0]
    D[0] = T.float16(0.5)
    D[1] = D[0] - T.float16(-2.25)
    E[0] = T.bool(True)
    E[1] = E[0] and T.bool(False)
    E[2] = T.if_then_else(E[0], False, True)
    F[0] = T.int8(-128)
    F[1] = T.int8(127) - F[0]
    T.evaluate(0)
    T.evaluate(T.int64(7))
