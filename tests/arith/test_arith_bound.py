"""Unit tests of kiln.arith constant integer bounds."""

from __future__ import annotations

import pytest

from kiln.arith import Analyzer, ConstIntBound, const_int_bound
from kiln.tir import (
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Range,
    Select,
    SizeVar,
    Var,
)

INF, NINF = ConstIntBound.POS_INF, ConstIntBound.NEG_INF
I32 = ConstIntBound(-(2**31), 2**31 - 1)


def b(lo: int, hi: int) -> ConstIntBound:
    return ConstIntBound(lo, hi)


def test_constants_and_variables() -> None:
    x, n = Var("x"), SizeVar("n")
    assert const_int_bound(IntImm("int32", 7)) == b(7, 7)
    assert const_int_bound(x) == I32
    assert const_int_bound(Var("w", "int64")) == b(-(2**63), 2**63 - 1)
    assert const_int_bound(Var("u", "uint8")) == b(0, 255)
    assert const_int_bound(Var("p", "bool")) == b(0, 1)
    assert const_int_bound(n) == b(0, 2**31 - 1)
    assert const_int_bound(x, {x: (-3, 5)}) == b(-3, 5)
    assert const_int_bound(Var("f", "float32")) == b(NINF, INF)


def test_add_sub_mul() -> None:
    x, y = Var("x"), Var("y")
    vb = {x: (-2, 3), y: (4, 10)}
    assert const_int_bound(x + y, vb) == b(2, 13)
    assert const_int_bound(x - y, vb) == b(-12, -1)
    assert const_int_bound(x * y, vb) == b(-20, 30)
    assert const_int_bound(x * -2, vb) == b(-6, 4)
    assert const_int_bound(x * 0, vb) == b(0, 0)


def test_signed_results_are_clamped_to_the_dtype() -> None:
    n = SizeVar("n")
    assert const_int_bound(n + 1) == b(1, 2**31 - 1)
    assert const_int_bound(Var("x") * 2) == I32


def test_unsigned_result_leaving_the_range_is_the_whole_range() -> None:
    u = Var("u", "uint8")
    assert const_int_bound(u - IntImm("uint8", 1), {u: (0, 10)}) == b(0, 255)
    assert const_int_bound(u + IntImm("uint8", 1), {u: (0, 10)}) == b(1, 11)


@pytest.mark.parametrize(
    ("op", "a", "c", "expected"),
    [
        (FloorDiv, (-7, 9), 4, (-2, 2)),
        (Div, (-7, 9), 4, (-1, 2)),
        (FloorDiv, (-7, 9), -4, (-3, 1)),
        (Div, (-7, 9), -4, (-2, 1)),
        (FloorMod, (-7, 9), 4, (0, 3)),
        (FloorMod, (0, 2), 4, (0, 2)),
        (FloorMod, (-7, 9), -4, (-3, 0)),
        (Mod, (-7, 9), 4, (-3, 3)),
        (Mod, (0, 9), 4, (0, 3)),
        (Mod, (-2, 2), -4, (-2, 2)),
    ],
)
def test_division_by_constants(op: type, a: tuple[int, int], c: int, expected: tuple) -> None:
    x = Var("x")
    assert const_int_bound(op(x, IntImm("int32", c)), {x: a}) == b(*expected)


def test_division_by_bounded_expressions() -> None:
    x, d = Var("x"), Var("d")
    vb = {x: (0, 100), d: (2, 5)}
    assert const_int_bound(FloorDiv(x, d), vb) == b(0, 50)
    assert const_int_bound(FloorMod(x, d), vb) == b(0, 4)
    assert const_int_bound(Mod(x, d), vb) == b(0, 4)
    assert const_int_bound(FloorDiv(x - 50, d), vb) == b(-25, 25)
    # a divisor that may be zero or negative: only the nonzero values count
    assert const_int_bound(FloorDiv(x, d - 3), vb) == b(-100, 100)
    assert const_int_bound(FloorMod(x, d - 3), vb) == b(0, 1)


def test_division_with_unbounded_operands() -> None:
    n, d = SizeVar("n", "int64"), SizeVar("d", "int64")
    top = 2**63 - 1
    assert const_int_bound(FloorDiv(n, IntImm("int64", 8))) == b(0, top // 8)
    assert const_int_bound(FloorDiv(n - 5, d), {d: (1, INF)}) == b(-5, top - 5)
    assert const_int_bound(FloorMod(n, d), {d: (1, INF)}) == b(0, top)


def test_min_max_select_compare() -> None:
    x, y = Var("x"), Var("y")
    vb = {x: (0, 10), y: (5, 7)}
    assert const_int_bound(Min(x, y), vb) == b(0, 7)
    assert const_int_bound(Max(x, y), vb) == b(5, 10)
    assert const_int_bound(Select(x < y, x, y * 2), vb) == b(0, 14)
    assert const_int_bound(x < y, vb) == b(0, 1)


def test_casts() -> None:
    x = Var("x")
    vb = {x: (-3, 300)}
    assert const_int_bound(Cast("int64", x), vb) == b(-3, 300)
    assert const_int_bound(Cast("int8", x), vb) == b(-128, 127)
    assert const_int_bound(Cast("uint8", x), vb) == b(0, 255)
    assert const_int_bound(Cast("bool", x + 4), vb) == b(1, 1)
    assert const_int_bound(Cast("int32", FloatImm("float32", 2.5))) == I32


def test_let_binds_the_value_bound() -> None:
    x, t = Var("x"), Var("t")
    assert const_int_bound(Let(t, x * 2, t + 1), {x: (0, 4)}) == b(1, 9)


def test_analyzer_bind_loop_ranges() -> None:
    i, j, n = Var("i"), Var("j"), SizeVar("n")
    an = Analyzer()
    an.bind(i, Range(IntImm("int32", 0), IntImm("int32", 16)))
    an.bind(j, (2, 4))
    assert an.const_int_bound(i) == b(0, 15)
    assert an.const_int_bound(j) == b(2, 5)
    an.bind(i, (0, Min(n, IntImm("int32", 8))))
    assert an.const_int_bound(i) == b(0, 7)
    an.update(i, (3, 3))
    assert an.const_int_bound(i * 2) == b(6, 6)


def test_bound_scope_restores() -> None:
    i = Var("i")
    an = Analyzer({i: (0, 100)})
    with an.bound_scope(i, (0, 4)):
        assert an.const_int_bound(i) == b(0, 3)
    assert an.const_int_bound(i) == b(0, 100)


def test_bound_value_helpers() -> None:
    assert repr(b(NINF, 3)) == "ConstIntBound(-inf, 3)"
    assert b(1, 2).union(b(5, 6)) == b(1, 6)
    assert b(1, 2).intersect(b(5, 6)) is None
    assert b(2, 2).is_const and not b(1, 2).is_const
    with pytest.raises(ValueError):
        ConstIntBound(3, 1)
    with pytest.raises(TypeError):
        const_int_bound(Var("x"), {"x": (0, 1)})  # type: ignore[dict-item]
