"""Division by symbolic dims (`kiln.arith.symbolic`, `divmod_symbolic*` in rules_div): the index
arithmetic of reshapes and transposes over a dim ``seq`` folds when a loop range says ``s < seq``,
and never when it does not hold."""

from __future__ import annotations

import itertools

from kiln.arith import Analyzer
from kiln.ir import structural_equal
from kiln.tir import Div, FloorDiv, FloorMod, Mod, PrimExpr, SizeVar, Var, convert
from tests.arith.arith_eval import evaluate, show

seq, batch = SizeVar("seq", "int64"), SizeVar("batch", "int64")
b, h, d, s = (Var(name, "int64") for name in "bhds")


def analyzer() -> Analyzer:
    ana = Analyzer()
    for v, extent in ((b, batch), (h, 2), (d, 16), (s, seq)):
        ana.bind(v, (0, extent))
    return ana


def same_values(e: PrimExpr, got: PrimExpr) -> None:
    """``got`` equals ``e`` at every point of the loop ranges for small dims."""
    for n_seq, n_batch in itertools.product((1, 3, 8), (1, 2)):
        for pt in itertools.product(range(n_batch), range(2), range(16), range(n_seq)):
            env = {seq: n_seq, batch: n_batch, **dict(zip((b, h, d, s), pt))}
            assert evaluate(got, env) == evaluate(e, env), (show(e), show(got), env)


def check(e: PrimExpr, want: PrimExpr) -> None:
    got = analyzer().simplify(e)
    assert structural_equal(got, want), f"{show(e)} -> {show(got)}, expected {show(want)}"
    same_values(e, got)


def test_unravel_of_a_flat_index_over_seq() -> None:
    flat = ((b * 2 + h) * 16 + d) * seq + s  # (batch, 2, 16, seq) row-major
    check(FloorDiv(flat, seq * 16), b * 2 + h)
    check(FloorMod(FloorDiv(flat, seq), 16), d)
    check(FloorMod(flat, seq), s)
    check(FloorDiv(FloorDiv(flat, seq * 16), 2), b)


def test_constant_factor_of_a_symbolic_divisor_cancels() -> None:
    flat = ((b * 2 + h) * seq + s) * 16 + d  # (batch, 2, seq, 16) row-major
    check(FloorDiv(flat, seq * 32), b)
    check(FloorMod(FloorDiv(flat, seq * 16), 2), h)
    check(FloorMod(FloorDiv(flat, 16), seq), s)


def test_truncating_kinds_with_a_non_negative_numerator() -> None:
    check(Div(b * seq + s, seq), b)
    check(Mod(b * seq + s, seq), s)


def test_nothing_folds_without_the_bound() -> None:
    ana = analyzer()
    t = Var("t", "int64")
    ana.bind(t, (0, seq + 1))  # t may equal seq: it carries into the quotient
    for e in (FloorDiv(b * seq + t, seq), FloorMod(b * seq + t, seq)):
        assert ana.simplify(e) is e
    u = Var("u", "int64")  # no range: may be negative
    for e in (FloorDiv(b * seq + u, seq), Div(b * seq + s - 1, seq)):
        assert ana.simplify(e) is e


def test_scopes_restore_the_symbolic_bound() -> None:
    ana = Analyzer()
    t = Var("t", "int64")
    e = FloorDiv(b * seq + t, seq)
    with ana.bound_scope(t, (0, seq)):
        assert structural_equal(ana.simplify(e), b)
    assert ana.symbolic_max(t) is None
    assert ana.simplify(e) is e


def test_an_exact_multiple_of_a_dim_divides_without_bounds() -> None:
    """``(batch*2) // batch`` is 2 wherever the divisor is nonzero (where the input is defined),
    so no loop range is needed: the shapes of a reshape by ``batch`` (issue 23)."""
    cases = [
        (FloorDiv(batch * 2, batch), 2),
        (FloorDiv(2 * batch, batch), 2),
        (FloorDiv(batch * seq * 6, seq * 2), batch * 3),
        (FloorMod(batch * seq * 6, seq * 2), 0),
        (Div(batch * seq, batch), seq),
        (Mod(seq * batch * 3, batch), 0),
    ]
    for e, want in cases:
        got = Analyzer().simplify(e)
        assert structural_equal(got, convert(want, "int64")), f"{show(e)} -> {show(got)}"
        for n_seq, n_batch in itertools.product((1, 2, 7), (1, 3)):
            env = {seq: n_seq, batch: n_batch}
            assert evaluate(got, env) == evaluate(e, env), (show(e), show(got), env)


def test_a_remainder_is_below_its_positive_symbolic_divisor() -> None:
    """``x % n < n`` holds (and ``x % n >= n`` fails) wherever ``n >= 1``: inside a loop over
    ``batch * n`` iterations; where ``n`` may be 0 both stay."""
    from kiln.tir import GE, GT, LT, const

    n, i = Var("n", "int64"), Var("i", "int64")
    ana = Analyzer({n: (0, 1 << 62), batch: (0, 1 << 62)})
    rem = FloorMod(i, n)
    assert not structural_equal(ana.simplify(LT(rem, n)), convert(True))
    with ana.bound_scope(i, (const(0, "int64"), batch * n)):
        assert structural_equal(ana.simplify(LT(rem, n)), convert(True))
        assert structural_equal(ana.simplify(GT(n, rem)), convert(True))
        assert structural_equal(ana.simplify(GE(rem, n)), convert(False))
        assert not structural_equal(ana.simplify(LT(rem, n - 1)), convert(True))
