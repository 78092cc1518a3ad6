# Comparisons (chained), ==, !=, and/or/not, conditions in Select.
from kiln.script import tir as T


@T.prim_func
def logic(A: T.Buffer((16,), "bool"), n: T.int32, m: T.int32):
    A[0] = n == m
    A[1] = n != m
    A[2] = 0 <= n < m
    A[3] = n < m and m < 10 or n == 0
    A[4] = not (n > m)
    A[5] = (n < m) == (m < 3)
    A[6] = n >= m and (n <= 4 or m > 2) and not A[0]
    A[7] = T.Select(n > 0, A[1], A[2])
    A[8] = 1 <= n <= m < 20
