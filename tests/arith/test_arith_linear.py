"""Linear forms (kiln.arith.linear) and the overflow guard (kiln.arith.overflow)."""

from __future__ import annotations

from kiln.arith.bound import BoundAnalyzer
from kiln.arith.linear import Linear, from_linear, merge_div_mod, to_linear
from kiln.arith.overflow import introduces_overflow
from kiln.ir import structural_equal
from kiln.tir import FloorDiv, FloorMod, IntImm, Var

x, y, f, i = Var("x"), Var("y"), Var("f"), Var("i")
INT32 = x.dtype


def test_structurally_equal_atoms_are_one_term() -> None:
    a, b = FloorDiv(x, IntImm(INT32, 3)), FloorDiv(x, IntImm(INT32, 3))
    diff = to_linear(a).plus(to_linear(b), -1)
    assert diff.is_const and diff.const == 0
    assert to_linear(x).plus(to_linear(Var("x")), -1).terms  # two variables named x differ


def test_quotient_remainder_pairs_merge() -> None:
    lin = merge_div_mod(to_linear((f // 64) * 1024 + (f % 64) * 16 + i))
    assert structural_equal(from_linear(lin, INT32), i + f * 16)  # terms in order of appearance
    lin = merge_div_mod(to_linear(x - (x // 8) * 8))
    assert structural_equal(from_linear(lin, INT32), FloorMod(x, 8))
    # a symbolic divisor: ((x // y) * y + x % y) * 3 is x * 3 (either operand order)
    lin = merge_div_mod(to_linear(((x // y) * y + x % y) * 3 + i))
    assert structural_equal(from_linear(lin, INT32), i + x * 3)  # merged terms go last
    lin = merge_div_mod(to_linear(y * (x // y) + x % y))
    assert structural_equal(from_linear(lin, INT32), x)
    lin = merge_div_mod(to_linear((x // y) * y + x % i))  # different divisors: kept
    assert len(lin.terms) == 2
    # the scale of a flattened stride: (x // y) * (y * 32) + (x % y) * 32 is x * 32
    lin = merge_div_mod(to_linear((x // y) * (y * 32) + (x % y) * 32))
    assert structural_equal(from_linear(lin, INT32), x * 32)
    lin = merge_div_mod(to_linear((x // y) * (y * 32) + (x % y) * 16))  # scales differ: kept
    assert len(lin.terms) == 2


def test_a_quotient_of_a_remainder_pairs_with_the_smaller_remainder() -> None:
    """``((f % 384) // 4) * 32 + (f % 4) * 8`` is ``(f % 384) * 8`` (``f % 4`` is
    ``(f % 384) % 4`` as the simplifier writes it), and with ``(f // 384) * 3072`` it is
    ``f * 8``: a copy whose loops were fused across a symbolic batch indexes plainly again."""
    e = (f // 384) * 3072 + ((f % 384) // 4) * 32 + (f % 4) * 8 + i
    assert structural_equal(from_linear(merge_div_mod(to_linear(e)), INT32), i + f * 8)
    for kept in (
        ((f % 384) // 4) * 32 + (f % 3) * 8,  # a remainder by another divisor
        ((f % 386) // 4) * 32 + (f % 4) * 8,  # 4 does not divide 386
        ((x % 384) // 4) * 32 + (f % 4) * 8,  # another variable
        ((f % 384) // 4) * 16 + (f % 4) * 8,  # scales differ
    ):
        assert len(merge_div_mod(to_linear(kept)).terms) == 2, kept


def test_from_linear_refuses_constants_that_do_not_fit() -> None:
    assert from_linear(Linear({}, 2**31), INT32) is None
    assert from_linear(to_linear(x * -31).plus(Linear({}, 31 * 2**30)), INT32) is None


def test_the_guard_checks_new_intermediates_not_the_root() -> None:
    e = (x + 3) + (y + 4) - 2
    # x + y overflows at x = -2**31, y = -1, where e is -2**31 + 4
    assert introduces_overflow(x + y + 5, e, set(), BoundAnalyzer())
    assert not introduces_overflow(x + y + 5, e, set(), BoundAnalyzer({x: (0, 9), y: (0, 9)}))
    # with x, y >= 0, x + y <= e - 5 <= 2**31 - 6: the input's own range proves it
    positive = BoundAnalyzer({x: (0, 2**31 - 1), y: (0, 2**31 - 1)})
    assert not introduces_overflow(x + y + 5, e, set(), positive)
    # x + 1 == (x + 5) - 4, and x + 5 does not overflow: proven through the anchor
    free = BoundAnalyzer()
    assert not introduces_overflow(FloorDiv(x + 1, 4) + 1, FloorDiv(x + 5, 4), set(), free)


def test_memoized_linear_forms_equal_fresh_ones_and_are_reused() -> None:
    x, y = Var("x"), Var("y")
    inner = x * 3 + y
    e = (inner - 7) * 2 + x
    memo: dict = {}
    lin = to_linear(e, memo)
    fresh = to_linear(e)
    assert (dict(lin.terms), lin.const) == (dict(fresh.terms), fresh.const)
    assert list(lin.items()) == list(fresh.items())  # the same order of terms too
    assert inner in memo and e in memo  # the forms of subexpressions are kept
    assert to_linear(e, memo) is lin and to_linear(inner, memo) is memo[inner]
