"""Unit tests of the kiln.arith simplifier, one group per rule family."""

from __future__ import annotations

from typing import Any

import pytest
from arith_eval import evaluate, show

from kiln.arith import Analyzer, simplify
from kiln.ir import structural_equal
from kiln.tir import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
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
    Mul,
    Not,
    Or,
    PrimExpr,
    Select,
    SizeVar,
    Sub,
    Var,
    call_extern,
)

x, y, z = Var("x"), Var("y"), Var("z")
i, j, n = Var("i"), Var("j"), SizeVar("n")
TRUE, FALSE = IntImm("bool", 1), IntImm("bool", 0)


def c(value: int, dtype: str = "int32") -> IntImm:
    return IntImm(dtype, value)


def check(e: PrimExpr, expected: Any, bounds: dict | None = None) -> None:
    got = simplify(e, bounds)
    want = expected if isinstance(expected, PrimExpr) else c(expected)
    assert structural_equal(got, want), f"{show(e)} -> {show(got)}, expected {show(want)}"
    assert got.dtype == e.dtype


def unchanged(e: PrimExpr, bounds: dict | None = None) -> None:
    got = simplify(e, bounds)
    assert got is e, f"{show(e)} should stay, got {show(got)}"


# -- constant folding -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "a", "b", "expected"),
    [
        (Add, 3, 4, 7),
        (Sub, 3, 4, -1),
        (Mul, -3, 4, -12),
        (Div, -7, 2, -3),
        (Mod, -7, 2, -1),
        (FloorDiv, -7, 2, -4),
        (FloorMod, -7, 2, 1),
        (Div, 7, -2, -3),
        (Mod, 7, -2, 1),
        (FloorDiv, 7, -2, -4),
        (FloorMod, 7, -2, -1),
        (Min, 3, -4, -4),
        (Max, 3, -4, 3),
    ],
)
def test_fold_integer_ops(op: type, a: int, b: int, expected: int) -> None:
    check(op(c(a), c(b)), expected)
    check(op(c(a, "int64"), c(b, "int64")), c(expected, "int64"))


def test_fold_never_divides_by_zero() -> None:
    for op in (Div, Mod, FloorDiv, FloorMod):
        unchanged(op(c(5), c(0)))


def test_fold_keeps_what_would_overflow() -> None:
    top = 2**31 - 1
    unchanged(Add(c(top), c(1)))
    unchanged(Mul(c(2**20), c(2**20)))
    unchanged(Div(c(-(2**31)), c(-1)))
    check(Add(c(top, "int64"), c(1, "int64")), c(2**31, "int64"))
    unchanged((x + top) + 1)


def test_fold_unsigned_wraps_like_c() -> None:
    check(Sub(c(1, "uint8"), c(2, "uint8")), c(255, "uint8"))
    check(Mul(c(16, "uint8"), c(17, "uint8")), c(16, "uint8"))


def test_fold_comparisons() -> None:
    check(LT(c(3), c(4)), TRUE)
    check(GE(c(3), c(4)), FALSE)
    check(EQ(FloatImm("float32", 1.5), FloatImm("float32", 1.5)), TRUE)
    check(NE(c(3), c(3)), FALSE)


def test_fold_casts() -> None:
    check(Cast("int64", c(5)), c(5, "int64"))
    check(Cast("int32", x), x)
    unchanged(Cast("int8", c(300)))
    check(Cast("uint8", c(-1)), c(255, "uint8"))
    check(Cast("bool", c(7)), TRUE)
    check(Cast("float32", c(3)), FloatImm("float32", 3.0))
    unchanged(Cast("float32", c(2**24 + 1)))
    check(Cast("int32", FloatImm("float32", -2.75)), -2)
    check(Cast("float32", FloatImm("float64", 0.5)), FloatImm("float32", 0.5))
    unchanged(Cast("float32", FloatImm("float64", 0.1)))


# -- identities and linear form -----------------------------------------------------------------


def test_identities() -> None:
    check(x + 0, x)
    check(c(0) + x, x)
    check(x * 1, x)
    check(c(1) * x, x)
    check(x * 0, 0)
    check(x - x, 0)
    check(x - 0, x)


def test_floats_are_left_alone() -> None:
    f = Var("f", "float32")
    unchanged(f + FloatImm("float32", 0.0))
    unchanged(f * FloatImm("float32", 1.0))


def test_like_terms_collect() -> None:
    check(x - (x + y), -y)
    check(x * 2 + y + x * 3 - y, x * 5)
    check((x + 3) + (y + 4) - 2, x + y + 5, {x: (-1000, 1000), y: (-1000, 1000)})
    # NOTE: unbounded, ``x + y`` overflows at x = -2**31, y = -1, where the input does not
    unchanged((x + 3) + (y + 4) - 2)
    check((x + 1) * 2, x * 2 + 2, {x: (-1000, 1000)})
    unchanged((x + 1) * 2)  # ``x * 2`` overflows at x = -2**30 - 1, where the input is -2**31
    check(c(2) * x + x, x * 3)
    check(x - (x - y), y)
    check(c(10) - x, c(10) - x)
    check(c(0) - x, x * -1)
    check(FloorDiv(x, 4) + y - FloorDiv(x, 4), y)


def test_index_arithmetic_of_split_loops() -> None:
    io, ii = Var("io"), Var("ii")
    check(io * 4 + ii - io * 4, ii)
    check((io * 4 + ii) - (ii + 3), io * 4 - 3)  # io * 4 is a node of the input: no new overflow
    check(c(7) * 3 - 1, 20)
    check(FloorDiv(io * 8 + ii, 4), io * 2 + FloorDiv(ii, 4))
    check(FloorMod(io * 8 + ii + 5, 4), FloorMod(ii + 1, 4), {ii: (0, 7)})
    unchanged(FloorMod(io * 8 + ii + 5, 4))  # ii + 1 overflows at ii = 2**31 - 1, io = -2**28
    check(Min(io + 2, io + 5), io + 2)


def test_like_terms_in_int64() -> None:
    a, b = Var("a", "int64"), Var("b", "int64")
    check(a * 2 + b + a * 3 - b + 1, a * 5 + c(1, "int64"))


def test_effects_are_never_dropped() -> None:
    call = call_extern("int32", "f")
    unchanged(call * 0)
    unchanged(call - call)


def test_quotient_remainder_pairs_recombine() -> None:
    check(FloorDiv(x, 4) * 4 + FloorMod(x, 4), x)
    check(Div(x, 8) * 16 + Mod(x, 8) * 2 + y, x * 2 + y)
    check(x - FloorDiv(x, 4) * 4, FloorMod(x, 4))
    check(x - Div(x, 4) * 4, Mod(x, 4))


# -- floor division and modulo ------------------------------------------------------------------


def test_floordiv_floormod_split_by_bounds() -> None:
    vb = {i: (0, 15), j: (0, 3)}
    check(FloorDiv(i * 4 + j, 4), i, vb)
    check(FloorMod(i * 4 + j, 4), j, vb)
    check(FloorDiv(j + i * 4 + 4, 4), i + 1, vb)
    check(FloorMod(i * 8 + j + 8, 4), j, vb)
    check(FloorDiv(x * 4 + j, 4), x, vb)  # floor semantics: no sign condition on x


def test_nested_quotient_remainder_pairs_recombine() -> None:
    o, ii = Var("o"), Var("ii")
    vb = {o: (0, 1023), ii: (0, 15)}
    # the store index of a fused 4-D transpose: (o // 256, o // 16 % 16, o % 16, ii)
    index = FloorDiv(o, 256) * 4096 + FloorMod(FloorDiv(o, 16), 16) * 256 + FloorMod(o, 16) * 16
    check(index + ii, o * 16 + ii, vb)


def test_floordiv_split_without_bounds() -> None:
    check(FloorDiv(x * 4 + y, 4), x + FloorDiv(y, 4))
    check(FloorMod(x * 4 + y, 4), FloorMod(y, 4))
    check(FloorDiv(x + 5, 4), FloorDiv(x + 1, 4) + 1)
    unchanged(FloorDiv(x - 1, 4))


def test_floordiv_by_one_and_nested() -> None:
    check(FloorDiv(x, 1), x)
    check(FloorMod(x, 1), 0)
    check(FloorDiv(FloorDiv(x, 4), 8), FloorDiv(x, 32))
    check(FloorMod(FloorMod(x, 8), 4), FloorMod(x, 4))
    check(FloorMod(FloorMod(x, 4), 8), FloorMod(x, 4))


def test_division_common_factor() -> None:
    check(FloorDiv(x * 6 + 4, 8), FloorDiv(x * 3 + 2, 4))
    check(FloorMod(x * 6, 8), FloorMod(x * 3, 4) * 2)
    check(FloorDiv(x * 4, 2), x * 2)


def test_division_common_factor_with_a_remainder() -> None:
    # floor(8x + 7 / 16) == floor(x / 2): the 7 never carries into the factor 8
    check(FloorDiv(x * 8 + 7, 16), FloorDiv(x, 2))
    check(FloorDiv(x * 8 + 7, 8), x)
    check(FloorMod(x * 8 + 7, 16), FloorMod(x, 2) * 8 + 7)
    check(FloorDiv(x * 8 + y * 4 + 9, 16), FloorDiv(x * 2 + y + 2, 4))
    check(Div(x * 8 + 7, 16), Div(x, 2), {x: (0, 1000)})
    check(Mod(x * 8 + 7, 16), Mod(x, 2) * 8 + 7, {x: (0, 1000)})
    check(FloorDiv(x * 2 + FloorDiv(i, 8), 32), FloorDiv(x, 16), {i: (0, 15)})
    check(FloorMod(x * 2 + FloorDiv(i, 8), 32), FloorMod(x, 16) * 2 + FloorDiv(i, 8), {i: (0, 15)})
    unchanged(FloorDiv(x * 2 + FloorDiv(i, 8), 32), {i: (0, 16)})  # i // 8 may be 2: carries
    unchanged(Div(x * 8 + 7, 16))  # truncating, x = -2: -9 / 16 is 0 but -2 / 2 is -1
    unchanged(Mod(x * 8 + 7, 16))


def test_floordiv_by_bounded_expression() -> None:
    vb = {i: (0, 3), n: (4, 64)}
    check(FloorDiv(i, n), 0, vb)
    check(FloorMod(i, n), i, vb)
    check(FloorMod(x + 1, x + 4), x + 1, {x: (0, 100)})
    unchanged(FloorMod(i, n), {i: (0, 5), n: (4, 64)})


# -- truncating division and modulo -------------------------------------------------------------


def test_trunc_division_needs_non_negative_operands() -> None:
    vb = {i: (0, 15), j: (0, 3)}
    check(Div(i * 4 + j, 4), i, vb)
    check(Mod(i * 4 + j, 4), j, vb)
    unchanged(Div(x * 4 + j, 4), vb)  # x may be negative: trunc != floor
    unchanged(Mod(x * 4 + j, 4), vb)
    check(Div(i * 4 + y, 4), i + Div(y, 4), {i: (0, 15), y: (0, 100)})


def test_trunc_exact_and_small() -> None:
    check(Div(x * 8 + 4, 4), x * 2 + 1)
    check(Mod(x * 8 + 4, 4), 0)
    check(Mod(x, 7), x, {x: (-6, 6)})
    check(Div(x, 7), 0, {x: (-6, 6)})
    check(Div(x, 1), x)
    check(Mod(x, 1), 0)
    check(Div(Div(x, 4), 8), Div(x, 32))
    check(Mod(Mod(x, 8), 4), Mod(x, 4))


def test_negative_divisors_only_fold() -> None:
    unchanged(FloorDiv(x * 4 + y, c(-4)))
    check(FloorDiv(x, c(-4)), 0, {x: (-3, 0)})


def test_rewrites_never_introduce_an_overflow() -> None:
    v = Var("v")
    near = {v: (2**30, 2**30 + 63)}
    e = Max(c(0), FloorDiv((v - 2**30) * -31, 128) * -1)
    got = simplify(e, near)
    assert evaluate(got, {v: 2**30 + 40}) == evaluate(e, {v: 2**30 + 40}) == 10
    # the linear form v*-31 + 31*2**30 overflows for every v in the bounds: not used
    unchanged((v - 2**30) * -31, near)
    unchanged((v - 2**30) + (v - 2**30), near)  # v*2 - 2**31: the constant does not fit
    check(FloorDiv(x + 5, 4), FloorDiv(x + 1, 4) + 1)  # x + 1 == (x + 5) - 4 cannot overflow


# -- min / max ----------------------------------------------------------------------------------


def test_min_max_by_bounds() -> None:
    check(Min(x, x + 1), x)
    check(Max(x, x + 1), x + 1)
    check(Min(x, x), x)
    check(Max(i, 0), i, {i: (0, 9)})
    check(Min(i, 16), i, {i: (0, 9)})
    check(Min(i, j), i, {i: (0, 3), j: (3, 9)})
    unchanged(Min(x, y))


def test_min_max_constants() -> None:
    check(Min(c(3), x), Min(x, 3))
    check(Min(Min(x, 3), 5), Min(x, 3))
    check(Max(Max(x, 3), 5), Max(x, 5))
    check(Max(Min(x, 3), 5), 5)


# -- comparisons --------------------------------------------------------------------------------


def test_comparisons_decided_by_bounds() -> None:
    vb = {i: (0, 7)}
    check(i < 10, TRUE, vb)
    check(i >= 8, FALSE, vb)
    check(EQ(i, c(9)), FALSE, vb)
    check(NE(i, c(9)), TRUE, vb)
    check(EQ(x - x, c(0)), TRUE)
    check(x < x + 1, TRUE)
    check(n >= 0, TRUE)
    check(EQ(x * 2, c(1)), FALSE)
    check(NE(x * 4 + 1, y * 2), TRUE)
    check(NE(x * 4 + 2, y * 2), NE(x * 2, y - 1))


def test_comparisons_canonical_form() -> None:
    check(x + 5 < 10, x < 5)
    check(LT(c(5), x), x > 5)
    check(LE(x + 1, y), x < y)
    check(x * 4 < 10, x < 3)
    check(x * 4 <= 10, x <= 2)
    check(LE(x, y - 1), x < y)
    check(GT(x + 1, y), GE(x, y))
    check(GE(c(3), x - y), x <= y + 3, {y: (-1000, 1000)})
    unchanged(GE(c(3), x - y))  # ``y + 3`` would overflow at y = 2**31 - 1
    check(EQ(x * 2 + 4, y * 2), EQ(x, y - 2))
    unchanged(x < y)
    unchanged(GE(x, y))
    unchanged(LE(x, c(9)))


# -- booleans and select ------------------------------------------------------------------------


def test_boolean_simplification() -> None:
    p = x < y
    check(And(TRUE, p), p)
    check(And(p, FALSE), FALSE)
    check(Or(p, TRUE), TRUE)
    check(Or(FALSE, p), p)
    check(Not(TRUE), FALSE)
    check(Not(Not(p)), p)
    check(Not(p), GE(x, y))
    check(And(p, p), p)
    check(And(p, Not(p)), FALSE)
    check(Or(Not(p), p), TRUE)
    q = Var("q", "bool")
    check(And(q, Not(q)), FALSE)
    check(Or(Not(q), q), TRUE)


def test_comparisons_of_one_expression_combine() -> None:
    check(And(x < 5, x < 3), x < 3)
    check(And(x < 3, x > 4), FALSE)
    check(And(x + y < 3, y + x >= 3), FALSE)
    check(Or(x < 5, x >= 5), TRUE)
    check(Or(x < 3, x < 5), x < 5)
    check(Or(EQ(x, c(3)), x < 3), x <= 3)
    check(And(x <= 3, x >= 3), EQ(x, c(3)))
    unchanged(And(x >= 0, x < 10))
    unchanged(Or(x < 0, x > 10))


def test_equal_and_not_equal_combine() -> None:
    check(And(EQ(x, y), NE(x, y)), FALSE)
    check(And(EQ(x, y), NE(y, x)), FALSE)
    check(Or(EQ(x, y), NE(y, x)), TRUE)
    check(Or(NE(x, c(3)), NE(x, c(4))), TRUE)
    check(And(NE(x, c(3)), x < 2), x < 2)
    check(And(NE(x, c(3)), x <= 3), x <= 2)
    check(And(NE(x, c(3)), EQ(x, c(3))), FALSE)
    check(Or(NE(x, c(3)), x < 5), TRUE)
    check(Or(NE(x, c(3)), x > 5), NE(x, c(3)))
    unchanged(And(NE(x, c(3)), x < 5))


def test_not_of_float_comparison_stays() -> None:
    f = Var("f", "float32")
    unchanged(Not(LT(f, FloatImm("float32", 1.0))))


def test_select() -> None:
    check(Select(TRUE, x, y), x)
    check(Select(FALSE, x, y), y)
    check(Select(x < y, z, z), z)
    check(Select(i < 10, x, y), x, {i: (0, 7)})
    p = Var("p", "bool")
    check(Select(Not(p), x, y), Select(p, y, x))
    check(Select(Not(x < y), x, y), Select(GE(x, y), x, y))
    unchanged(Select(x < y, x, y))


def test_let() -> None:
    t = Var("t")
    check(Let(t, c(3), t + 1), 4)
    check(Let(t, x, t * 2 - x), x)
    check(Let(t, x * y, x), x)
    e = Let(t, x * y, t + t)
    check(e, Let(t, x * y, t * 2))


# -- analyzer queries -------------------------------------------------------------------------


def test_can_prove() -> None:
    an = Analyzer({i: (0, 15), j: (0, 3)})
    assert an.can_prove(i * 4 + j < 64)
    assert not an.can_prove(i * 4 + j < 63)
    assert an.can_prove(And(i >= 0, j <= 3))
    assert not an.can_prove(x < y)
    assert an.can_prove_equal(FloorDiv(i * 4 + j, 4), i)
    assert an.can_prove_equal(x * 2 + x, x * 3)
    assert not an.can_prove_equal(x, y)


def test_simple_expressions_keep_their_identity() -> None:
    for e in (x, x + y, FloorDiv(x, 4), Min(x, y), x < y, Select(x < y, x, y), x * y):
        unchanged(e)
    big = x * y + FloorDiv(z, 4)
    assert simplify(big) is big


def test_vectors_pass_through() -> None:
    from kiln.tir import Broadcast, Ramp

    unchanged(Ramp(x, c(1), 4) + Broadcast(c(0), 4))


def test_python_numbers_are_accepted() -> None:
    assert structural_equal(simplify(7), c(7))


def test_too_deep_expressions_come_back_unchanged() -> None:
    e: PrimExpr = x
    for _ in range(3000):
        e = e + x
    assert simplify(e) is e


def test_no_rule_loops_on_a_realistic_index() -> None:
    i0, i1, i2, i3 = (Var(f"i{k}") for k in range(4))
    an = Analyzer({i0: (0, 3), i1: (0, 7), i2: (0, 15), i3: (0, 31)})
    fused = ((i0 * 8 + i1) * 16 + i2) * 32 + i3
    assert structural_equal(an.simplify(FloorMod(FloorDiv(fused, 32), 16)), i2)
    assert structural_equal(an.simplify(FloorDiv(fused, 512)), i0 * 8 + i1)
    assert structural_equal(an.simplify(FloorDiv(FloorMod(fused, 4096), 512)), i1)
    assert not an.hit_step_limit


class _Recording(Analyzer):
    """An analyzer that records every expression its rewrite driver is asked to simplify."""

    def __init__(self, bounds: Any) -> None:
        super().__init__(bounds)
        self.seen: list[PrimExpr] = []

    def _rewrite(self, e: PrimExpr) -> PrimExpr:
        self.seen.append(e)
        return super()._rewrite(e)


def test_decided_if_then_else_chain_simplifies_only_the_branch_taken() -> None:
    """A concat's chain of ``if_then_else`` under a loop piece that decides it: the result is
    the simplified branch taken, and the branches not taken are never simplified."""
    from kiln.tir.op import if_then_else

    c = Var("c")
    reads = [(i * 16 + j) - k * 64 + 0 for k in range(6)]
    chain: PrimExpr = reads[-1]
    for k in reversed(range(5)):
        chain = if_then_else(LT(c, IntImm("int32", (k + 1) * 4)), reads[k], chain)
    an = _Recording({c: (8, 11), i: (0, 3), j: (0, 15)})
    got = an.simplify(chain)
    assert structural_equal(got, simplify(reads[2], {c: (8, 11), i: (0, 3), j: (0, 15)}))
    seen = {id(e) for e in an.seen}
    assert id(reads[2]) in seen
    assert not {id(reads[k]) for k in (0, 1, 3, 4, 5)} & seen
    # undecided (c may be on either side of 12): both sides are simplified, nothing is dropped
    open_chain = Analyzer({c: (8, 13), i: (0, 3), j: (0, 15)}).simplify(chain)
    assert "if_then_else" in str(open_chain)
