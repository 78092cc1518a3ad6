"""Expressions thousands of operations deep: verified, printed, parsed, lowered and run, or refused
with a kiln error naming the limit; never a `RecursionError` or a crash."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
import kiln.script
from kiln import te, tir
from kiln.codegen.build import generate
from kiln.driver import lower
from kiln.errors import ScriptError
from kiln.ir import Target, structural_equal

N = 16


def deep_func(n: int, nested: bool) -> tir.PrimFunc:
    """``B[i] = A[i] + A[i] + ...`` (a left chain of ``n`` adds) or, ``nested``, the right-nested
    ``A[i] - max(A[i], A[i] - max(...))``."""
    a_h, b_h = tir.Var("A", "handle"), tir.Var("B", "handle")
    A = tir.decl_buffer((N,), "float32", "A")
    B = tir.decl_buffer((N,), "float32", "B")
    i = tir.Var("i")
    e: tir.PrimExpr = A[i]
    for k in range(n):
        if nested:
            e = A[i] - e if k % 2 else tir.Max(A[i], e)
        else:
            e = e + A[i]
    body = tir.For(i, 0, N, tir.ForKind.SERIAL, tir.BufferStore(B, e, (i,)))
    return tir.PrimFunc((a_h, b_h), body, buffer_map={a_h: A, b_h: B}, attrs={"global_symbol": "f"})


def expected(a: np.ndarray, n: int, nested: bool) -> np.ndarray:
    if not nested:
        return a * (n + 1)
    e = a.copy()
    for k in range(n):
        e = a - e if k % 2 else np.maximum(a, e)
    return e


@pytest.mark.parametrize("nested", [False, True], ids=["chain", "nested"])
def test_deep_expression_builds_and_runs(nested: bool) -> None:
    n = 2_000
    f = kiln.build(deep_func(n, nested))["f"]
    a = np.random.default_rng(0).random(N, dtype=np.float32)
    b = np.zeros(N, np.float32)
    f(a, b)
    np.testing.assert_allclose(b, expected(a, n, nested), rtol=1e-4)


@pytest.mark.parametrize("nested", [False, True], ids=["chain", "nested"])
def test_ten_thousand_deep_verifies_prints_and_lowers_to_c(nested: bool) -> None:
    func = deep_func(10_000, nested)
    tir.verify_well_formed(func)
    text = func.script()
    assert text.count("A[i]") == 10_001
    c = generate(lower(func, Target("c")), Target("c")).source
    assert c.count("A_data[i]") == 10_001


def test_deep_script_parses_prints_and_parses_back() -> None:
    body = " + ".join(["A[i]"] * 2_000)
    text = (
        "@T.prim_func\n"
        'def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):\n'
        "    for i in range(16):\n"
        f"        B[i] = {body}\n"
    )
    func = kiln.script.from_source(text, "deep.py")
    again = kiln.script.from_source(func.script(), "printed.py")
    assert structural_equal(func, again)


def test_script_deeper_than_pythons_parser_is_a_script_error() -> None:
    body = " + ".join(["A[0]"] * 10_000)
    text = f'@T.prim_func\ndef f(A: T.Buffer((16,), "float32")):\n    A[1] = {body}\n'
    with pytest.raises(ScriptError, match="nested too deeply for Python's parser") as info:
        kiln.script.from_source(text, "deep.py")
    assert "RecursionError" not in str(info.value)


def test_error_on_a_long_line_shows_a_bounded_window() -> None:
    body = " + ".join(["A[0]"] * 2_000)
    text = f'@T.prim_func\ndef f(A: T.Buffer((16,), "float32")):\n    A[1] = {body} + nope\n'
    with pytest.raises(ScriptError, match="name 'nope' is not defined") as info:
        kiln.script.from_source(text, "deep.py")
    head, shown, caret = str(info.value).splitlines()
    assert len(shown) < 140 and shown.rstrip().endswith("+ nope")
    assert caret.index("^") == shown.index("nope") and caret.count("^") == 4


def test_deep_tensor_expression_builds() -> None:
    A = te.placeholder((N,), "float32", name="A")

    def body(i: tir.PrimExpr) -> tir.PrimExpr:
        e = A[i]
        for k in range(2_000):
            e = A[i] - e if k % 2 else tir.Max(A[i], e)
        return e

    B = te.compute((N,), body, name="B")
    f = kiln.build_op([B], [A, B])
    a = np.random.default_rng(1).random(N, dtype=np.float32)
    b = np.zeros(N, np.float32)
    f(a, b)
    np.testing.assert_allclose(b, expected(a, 2_000, True), rtol=1e-5)
