"""Slice stores: a vector (``A[0:4] = B[4:8]``) or a scalar filling the slice (``A[0:2] = 1``, as
in TVM); parsed, printed back, built and checked against numpy."""

from __future__ import annotations

import numpy as np

import kiln
import kiln.script
from tests.script.helpers import roundtrip

TEXT = """
@T.prim_func
def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), x: T.float32):
    A[0:2] = 1
    A[2:6] = x
    A[6:14:2] = B[0:4] + T.Broadcast(x, 4)
    A[14:16] = B[14:16]
"""


def test_scalar_fills_a_slice_and_vectors_store() -> None:
    func = kiln.script.from_source(TEXT, "slices.py")
    roundtrip(func)
    a = np.full(16, -1, np.float32)
    b = np.arange(16, dtype=np.float32)
    kiln.build(func)["f"](a, b, np.float32(5))
    want = np.full(16, -1, np.float32)
    want[0:2], want[2:6], want[6:14:2], want[14:16] = 1, 5, b[0:4] + 5, b[14:16]
    np.testing.assert_array_equal(a, want)
