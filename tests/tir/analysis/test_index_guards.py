"""Index checks (``tir.assert_in_range``) become run-time guards: a `KernelIndexError` naming the
function, the operator, the index and the range, placed out of the loops they do not depend on
and never ahead of a write they read, dropped where kiln.arith proves them (issue 22,
finding 8)."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.script
from kiln.errors import KernelIndexError

HEAD = (
    "from kiln.script import tir as T\n@T.prim_func\n"
    'def f(X: T.Buffer((32,), "float32"), I: T.Buffer((4,), "{idx}"), '
    'O: T.Buffer((32,), "float32"), k: T.int32):\n'
)


def check(v: str, lo: str, hi: str, what: str = "pick", dtype: str = "int32") -> str:
    return f'T.call_intrin("{dtype}", "tir.assert_in_range", {v}, {lo}, {hi}, "{what}")'


def build(body: str, idx: str = "int32"):
    return kiln.build(kiln.script.from_source(HEAD.format(idx=idx) + body, "guards.py"))


def kernel_text(mod) -> str:
    src = mod.inspect_source()
    body = src[src.index("static int32_t f(") :]
    body = body[body.index("{") :]
    return body[: body.index("\n}\n")]


X = np.arange(32, dtype=np.float32)


def run(mod, idx, k: int = 0) -> np.ndarray:
    out = np.zeros(32, np.float32)
    mod["f"](X, idx, out, k)
    return out


ROWS = (
    "    for r in range(4):\n"
    "        for c in T.vectorized(8):\n"
    "            O[r * 8 + c] = X[{chk} * 8 + c]\n"
)


def test_a_row_index_is_checked_once_per_row_outside_the_vector_loop() -> None:
    mod = build(ROWS.format(chk=check("I[r]", 0, 4)))
    text = kernel_text(mod)
    assert text.count("kiln_raise_fmt") == 1
    assert text.index("kiln_raise_fmt") < text.index("#pragma omp simd")
    idx = np.array([3, 0, 2, 1], np.int32)
    np.testing.assert_array_equal(run(mod, idx), X.reshape(4, 8)[idx].reshape(-1))
    idx[2] = 4
    with pytest.raises(KernelIndexError, match=r"^f: pick: index 4 is out of range \[0, 4\)$"):
        run(mod, idx)
    idx[2] = -1
    with pytest.raises(IndexError, match=r"index -1 is out of range \[0, 4\)"):
        run(mod, idx)


def test_a_64_bit_index_is_reported_exactly() -> None:
    chk = check("I[r]", "T.int64(0)", "T.int64(4)", dtype="int64")
    mod = build(ROWS.format(chk=f"T.Cast('int32', {chk})"), idx="int64")
    idx = np.array([0, 1, 2**40, 3], np.int64)
    with pytest.raises(KernelIndexError, match=r"index 1099511627776 is out of range \[0, 4\)"):
        run(mod, idx)


def test_a_check_is_not_moved_ahead_of_a_write_it_reads() -> None:
    body = (
        "    for r in range(4):\n"
        "        I[0] = I[0] + 3\n"
        f"        O[r] = X[{check('I[0]', 0, 8)}]\n"
    )
    mod = build(body)
    with pytest.raises(KernelIndexError, match=r"index 9 is out of range \[0, 8\)"):
        run(mod, np.array([-3, 0, 0, 0], np.int32))  # I[0] becomes 0, 3, 6, 9


def test_a_loop_invariant_check_is_made_once_before_a_parallel_loop() -> None:
    mod = build(f"    for i in T.parallel(32):\n        O[i] = X[{check('k', 0, 32)}] + X[i]\n")
    text = kernel_text(mod)
    assert text.count("kiln_raise_fmt") == 1 and "kiln_par_capture" not in text
    assert text.index("kiln_raise_fmt") < text.index("#pragma omp parallel")
    np.testing.assert_array_equal(run(mod, np.zeros(4, np.int32), k=5), X + 5)
    with pytest.raises(KernelIndexError, match=r"index 32 is out of range \[0, 32\)"):
        run(mod, np.zeros(4, np.int32), k=32)


def test_a_proven_index_needs_no_check() -> None:
    mod = build(f"    for i in range(32):\n        O[i] = X[{check('31 - i', 0, 32)}]\n")
    assert "kiln_raise" not in mod.inspect_source()
    np.testing.assert_array_equal(run(mod, np.zeros(4, np.int32)), X[::-1])


def test_a_check_under_a_condition_runs_only_where_the_condition_holds() -> None:
    body = (
        "    for i in range(4):\n"
        f"        O[i] = T.if_then_else(k > 0, X[{check('I[i]', 0, 32)}], T.float32(-1))\n"
    )
    mod = build(body)
    idx = np.array([40, 1, 2, 3], np.int32)
    assert (run(mod, idx, k=0)[:4] == -1).all()
    with pytest.raises(KernelIndexError, match="index 40"):
        run(mod, idx, k=1)
