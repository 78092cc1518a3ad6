"""Unit tests of kiln.arith.simplify_stmt."""

from __future__ import annotations

from kiln.arith import Analyzer, simplify_stmt
from kiln.ir import structural_equal
from kiln.tir import (
    AssertStmt,
    AttrStmt,
    BufferStore,
    Evaluate,
    FloorDiv,
    FloorMod,
    For,
    ForKind,
    IfThenElse,
    IntImm,
    IterVar,
    LetStmt,
    Max,
    Min,
    SeqStmt,
    SizeVar,
    StringImm,
    Var,
    decl_buffer,
    seq,
)

A = decl_buffer((64,), "float32", "A")
B = decl_buffer((16, 4), "float32", "B")


def c(v: int) -> IntImm:
    return IntImm("int32", v)


def store(index: object, value: float = 1.0) -> BufferStore:
    from kiln.tir import FloatImm

    return BufferStore(A, FloatImm("float32", value), (index,))


def loop(var: Var, extent: int | object, body: object) -> For:
    return For(
        var, c(0), extent if not isinstance(extent, int) else c(extent), ForKind.SERIAL, body
    )


def test_loop_ranges_are_bound_inside_the_body() -> None:
    i, j = Var("i"), Var("j")
    fused = i * 4 + j
    body = BufferStore(B, B[FloorDiv(fused, 4), FloorMod(fused, 4)], (FloorDiv(fused, 4), j))
    s = loop(i, 16, loop(j, 4, body))
    got = simplify_stmt(s)
    want = loop(i, 16, loop(j, 4, BufferStore(B, B[i, j], (i, j))))
    assert structural_equal(got, want)
    assert got.body.body.buffer is B  # buffers are never rebuilt


def test_loop_bound_does_not_leak_outside() -> None:
    i = Var("i")
    an = Analyzer()
    s = seq(loop(i, 4, store(FloorDiv(i, 4))), store(FloorDiv(i, 4)))
    got = an.simplify_stmt(s)
    assert structural_equal(got, seq(loop(i, 4, store(c(0))), store(FloorDiv(i, 4))))


def test_decided_if_is_removed() -> None:
    i = Var("i")
    then, other = store(i, 1.0), store(i, 2.0)
    got = simplify_stmt(loop(i, 8, IfThenElse(i < 10, then, other)))
    assert structural_equal(got, loop(i, 8, then))
    got = simplify_stmt(loop(i, 8, IfThenElse(i >= 8, then, other)))
    assert structural_equal(got, loop(i, 8, other))
    got = simplify_stmt(loop(i, 8, seq(store(i), IfThenElse(i >= 8, then))))
    assert structural_equal(got, loop(i, 8, store(i)))
    got = simplify_stmt(IfThenElse(c(1) > c(2), then))
    assert structural_equal(got, Evaluate(c(0)))


def test_if_condition_constrains_its_branches() -> None:
    i = Var("i")
    inner = IfThenElse(i < 5, store(FloorMod(i, 8)), store(FloorDiv(i, 8)))
    got = simplify_stmt(loop(i, 16, inner))
    want = loop(i, 16, IfThenElse(i < 5, store(i), store(FloorDiv(i, 8))))
    assert structural_equal(got, want)
    nested = IfThenElse(i < 5, IfThenElse(i < 7, store(i)), IfThenElse(i < 3, store(i)))
    got = simplify_stmt(loop(i, 16, nested))
    assert structural_equal(got, loop(i, 16, IfThenElse(i < 5, store(i), Evaluate(c(0)))))


def test_let_and_assert_and_thread_extent() -> None:
    n, t, tx = SizeVar("n"), Var("t"), Var("threadIdx.x")
    let = LetStmt(t, FloorMod(n, 4), store(FloorDiv(t, 4)))
    assert structural_equal(simplify_stmt(let), LetStmt(t, FloorMod(n, 4), store(c(0))))
    msg = StringImm("n too large")
    check = AssertStmt(n < 8, msg, store(FloorDiv(n, 8)))
    assert structural_equal(simplify_stmt(check), AssertStmt(n < 8, msg, store(c(0))))
    iv = IterVar(None, tx, thread_tag="threadIdx.x")
    attr = AttrStmt(iv, "thread_extent", c(32), store(FloorMod(tx, 32)))
    got = simplify_stmt(attr)
    assert structural_equal(got, AttrStmt(iv, "thread_extent", c(32), store(tx)))
    assert got.node is iv


def test_unchanged_statements_keep_identity() -> None:
    i = Var("i")
    s = loop(i, 8, SeqStmt((store(i), store(i + 1))))
    assert simplify_stmt(s) is s


def test_loop_extent_and_min_are_simplified() -> None:
    i, n = Var("i"), SizeVar("n")
    s = For(i, n - n, n * 2 - n, ForKind.SERIAL, store(i))
    got = simplify_stmt(s)
    assert structural_equal(got, For(i, c(0), n, ForKind.SERIAL, store(i)))
    assert got.loop_var is i


def test_prim_func_body_is_simplified() -> None:
    from kiln.tir import PrimFunc

    i = Var("i")
    func = PrimFunc((A.data,), loop(i, 8, store(FloorMod(i, 8))))
    got = simplify_stmt(func)
    assert isinstance(got, PrimFunc)
    assert structural_equal(got.body, loop(i, 8, store(i)))
    same = PrimFunc((A.data,), loop(i, 8, store(i)))
    assert simplify_stmt(same) is same


def test_a_loop_body_runs_only_when_its_extent_is_positive() -> None:
    """Inside a loop over ``b * 2 * s`` shape variables each of them is at least 1 (the body
    does not run otherwise); outside, and for a factor that may be negative, nothing changes."""
    b, s = SizeVar("b", "int64"), SizeVar("s", "int64")
    i = Var("i", "int64")
    an = Analyzer()
    assert an.const_int_bound(s).min_value == 0
    with an.bound_scope(i, (IntImm("int64", 0), b * 2 * s)):
        assert an.const_int_bound(s).min_value == 1 and an.const_int_bound(b).min_value == 1
    assert an.const_int_bound(s).min_value == 0
    v = Var("v", "int64")
    with an.bound_scope(i, (IntImm("int64", 0), v * s)):
        assert an.const_int_bound(s).min_value == 0
    # a split loop's whole steps: min((s + 7) // 8, s // 8) >= 1 needs s >= 8
    with an.bound_scope(i, (IntImm("int64", 0), Min((s + 7) // 8, s // 8))):
        assert an.const_int_bound(s).min_value == 8
    with an.bound_scope(i, (IntImm("int64", 0), (s + 7) // 8)):
        assert an.const_int_bound(s).min_value == 1
    with an.bound_scope(i, (IntImm("int64", 0), (s + 7) // 8 - Min((s + 7) // 8, s // 8))):
        assert an.const_int_bound(s).min_value == 1  # the tail
    with an.bound_scope(i, (IntImm("int64", 0), Max(s // 8, b))):
        assert an.const_int_bound(s).min_value == 0  # a max says nothing of either side
