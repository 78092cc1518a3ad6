# Integer arithmetic: floordiv/floormod/truncdiv/truncmod, min/max, precedence and negation.
from kiln.script import tir as T


@T.prim_func
def arith(A: T.Buffer((16,), "int32"), B: T.Buffer((16,), "float32"), n: T.int32, m: T.int32):
    A[0] = n // m + n % m
    A[1] = T.floordiv(n, 4) - T.floormod(n, 4)
    A[2] = T.truncdiv(n, m) * T.truncmod(n, m)
    A[3] = T.max(n, m) + T.min(n, 0) + max(n, 3) - min(m, n)
    A[4] = (n + m) * (n - m) - (n - (m - 1))
    A[5] = -n + 3 - n * (2 + m)
    A[6] = 1 - n
    A[7] = n // (m // 2) % (m * 3)
    B[0] = B[1] / B[2] - (B[3] - B[4]) / (B[5] * B[6])
    B[1] = -B[0]
    A[8] = T.max_value("int32") + T.min_value("int32")
    B[2] = T.max_value("float32")
