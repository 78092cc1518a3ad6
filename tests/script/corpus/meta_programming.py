# Python values evaluated while parsing: constants, static branches and unrolled lists.
from kiln.script import tir as T

N = 4
SCALES = [1.0, 2.0, 4.0]


@T.prim_func
def meta(A: T.Buffer((N, 8), "float32")):
    for k in SCALES:
        A[0, int(k)] = T.float32(k)
    if N > 2:
        A[1, 0] = T.float32(N)
    else:
        A[1, 0] = T.float32(0)
    rows = N // 2
    for i in range(rows * 2):
        A[i, 1] = A[i, 0] + T.float32(len(SCALES))
    name = f"kernel_{N}"
    T.call_extern("int32", name, A.data)
