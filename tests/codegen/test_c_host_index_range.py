"""Index types and the entry's element-count check: tensors past 2**31 elements.

A buffer that may hold more than ``2**31 - 1`` elements is indexed in int64 (FlattenBuffer); a
tensor the kernel indexes in int32 and whose declared shape does not bound it is refused at the
entry with a ValueError naming the function and the argument. The big tensors here come from
``np.zeros`` / ``np.empty``: the pages a test never touches are never allocated.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import kiln
from kiln.script import tir as T

ROWS, COLS = 32769, 65536  # 2**31 + 2**16 int8 elements: 2 GiB of address space

LAST_ROW = textwrap.dedent(
    f"""
    import numpy as np
    import kiln
    from kiln import te
    from kiln.script import tir as T

    @T.prim_func
    def last_row(x: T.handle, y: T.handle):
        n = T.int32()
        X = T.match_buffer(x, (n, {COLS}), "int8")
        Y = T.match_buffer(y, ({COLS},), "int8")
        for j in range({COLS}):
            Y[j] = X[n - 1, j]

    X = np.zeros(({ROWS}, {COLS}), dtype="int8")
    X[-1] = (np.arange({COLS}) % 127).astype("int8")
    Y = np.zeros({COLS}, dtype="int8")
    kiln.build(last_row)["last_row"](X, Y)
    assert (Y == X[-1]).all(), "T.int32 shape: wrong values"

    n = te.var("n")
    xt = te.placeholder((n, {COLS}), "int8", name="X")
    yt = te.compute(({COLS},), lambda j: xt[n - 1, j], name="Y")
    Y[:] = 0
    kiln.build(te.lower(te.create_schedule(yt.op), [xt, yt]))["main"](X, Y)
    assert (Y == X[-1]).all(), "te.var shape: wrong values"
    print("ok")
    """
)


def test_a_symbolic_shape_past_2_31_elements_is_indexed_in_int64(tmp_path: Path) -> None:
    # NOTE: in a subprocess: before int64 indexing this read segfaulted (the flat index
    # (n - 1) * 65536 + j wrapped around in int32)
    script = tmp_path / "last_row.py"
    script.write_text(LAST_ROW)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


@T.prim_func
def main(a: T.handle, n: T.int32, m: T.int32):
    A = T.match_buffer(a, (n * m,), "int8")
    A[n * m - 1] = T.int8(1)


def test_the_entry_refuses_a_tensor_its_kernel_cannot_index() -> None:
    mod = kiln.build(main)
    assert "kiln_check_count(" in mod.inspect_source()
    f = mod["main"]
    small = np.zeros(6, "int8")
    f(small, 2, 3)
    assert small.tolist() == [0, 0, 0, 0, 0, 1]
    big = np.empty(ROWS * COLS, "int8")  # never touched
    want = (
        "main: argument a has 2147549184 elements; this kernel indexes it with int32 "
        "(at most 2147483647)"
    )
    with pytest.raises(ValueError, match=want.replace("(", r"\(").replace(")", r"\)")):
        f(big, ROWS, COLS)
    del big


def test_no_count_check_where_the_shape_bounds_the_count() -> None:
    @T.prim_func
    def copy(a: T.handle, b: T.handle):
        n = T.int32()
        A = T.match_buffer(a, (n,), "float32")
        B = T.match_buffer(b, (n, 4), "float32")
        for i, j in T.grid(n, 4):
            B[i, j] = A[i]

    src = kiln.build(copy).inspect_source()
    assert "kiln_check_count(" not in src  # A: n fits int32; B: indexed in int64
    assert "int64_t" in src.split("static int32_t copy")[-1].split("TVM_FFI_DLL_EXPORT")[0]


def test_no_count_check_for_int64_indices() -> None:
    """A 1-D buffer of int64 dims (``(batch * seq,)``, as the graph level declares them) is
    indexed in int64, which reaches every tensor that fits in memory: no count check."""

    @T.prim_func
    def flat(a: T.handle, b: T.handle):
        batch, seq = T.int64(), T.int64()
        A = T.match_buffer(a, (batch, seq), "float32")
        B = T.match_buffer(b, (batch * seq,), "float32")
        for i, j in T.grid(batch, seq):
            B[i * seq + j] = A[i, j]

    mod = kiln.build(flat)
    src = mod.inspect_source()
    assert "kiln_check_count(" not in src
    a = np.arange(6, dtype="float32").reshape(2, 3)
    b = np.zeros(6, "float32")
    mod["flat"](a, b)
    np.testing.assert_array_equal(b, a.reshape(-1))
    with pytest.raises(ValueError, match="b.shape"):
        mod["flat"](a, np.zeros(5, "float32"))
