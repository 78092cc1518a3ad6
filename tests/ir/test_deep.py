"""Walks of deep IR: visitors, mutators and structural equality past Python's recursion limit."""

from __future__ import annotations

import sys
import threading

import pytest

from kiln import tir
from kiln.errors import IRValueError
from kiln.ir import deep, structural_equal, structural_hash
from kiln.ir.deep import DeepWalker, on_fresh_stack, stack_safe
from kiln.ir.visitor import Mutator, Visitor, post_order_visit

DEPTHS = [2_000, 10_000]


def chain(n: int) -> tir.PrimExpr:
    """``((x + 1) + 1) ... + 1``: ``n`` additions nested on the left."""
    e: tir.PrimExpr = tir.Var("x")
    for _ in range(n):
        e = e + 1
    return e


def nested(n: int) -> tir.PrimExpr:
    """``1 - max(1, 1 - max(...))``: ``n`` operations nested on the right, two kinds."""
    e: tir.PrimExpr = tir.Var("x")
    for k in range(n):
        e = 1 - e if k % 2 else tir.Max(tir.const(1), e)
    return e


@pytest.mark.parametrize("n", DEPTHS)
@pytest.mark.parametrize("make", [chain, nested])
def test_visitor_and_mutator_walk_deep_expressions(make, n: int) -> None:
    e = make(n)
    seen: list[int] = []
    post_order_visit(e, lambda node: seen.append(1))
    assert len(seen) == 2 * n + 1

    class Rename(Mutator):
        def visit_Var(self, v: tir.Var) -> tir.Var:
            return tir.Var("y")

    assert Mutator().visit(e) is e  # nothing changed: the same object back
    renamed = Rename().visit(e)
    assert renamed is not e and type(renamed) is type(e)
    assert structural_equal(renamed, e, map_free_vars=True)
    assert structural_hash(renamed, True) == structural_hash(e, True)
    assert not structural_equal(renamed, make(n - 1), map_free_vars=True)


def test_recursion_limit_is_unchanged_and_no_thread_is_left() -> None:
    before = (sys.getrecursionlimit(), threading.active_count())
    Visitor().visit(chain(5_000))
    assert (sys.getrecursionlimit(), threading.active_count()) == before


class _Countdown(DeepWalker):
    @stack_safe
    def down(self, k: int) -> int:
        return 0 if k == 0 else 1 + self.down(k - 1)


def test_stack_safe_method_recurses_past_the_recursion_limit() -> None:
    assert _Countdown().down(20_000) == 20_000


def test_errors_come_back_from_a_fresh_stack() -> None:
    def fail() -> None:
        raise KeyError("inner")

    with pytest.raises(KeyError, match="inner"):
        on_fresh_stack(fail)
    assert on_fresh_stack(lambda a, b: a + b, 2, 3) == 5


def test_nesting_past_the_limit_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deep, "MAX_NESTING", 1_000)
    with pytest.raises(
        IRValueError, match=r"kiln follows at most 1000 \(kiln.ir.deep.MAX_NESTING\)"
    ):
        Visitor().visit(chain(3_000))
    with pytest.raises(IRValueError, match="at most 1000"):
        _Countdown().down(5_000)
