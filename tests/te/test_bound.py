"""Bound inference (kiln.te.bound) and the ceiling division of split extents, on kiln.arith's
linear forms: exact intervals, and soundness as a property."""

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from kiln import tir
from kiln.arith.linear import from_linear
from kiln.ir.dtype import DataType
from kiln.te.bound import interval, union
from kiln.te.lower_loops import ceildiv
from kiln.tir.expr import as_const_int
from tests.te.tir_interp import eval_expr
from tests.te.tir_text import expr

X, Y, Z = tir.Var("x"), tir.Var("y"), tir.Var("z")
VARS = (X, Y, Z)
INT32 = X.dtype
INT64 = DataType.parse("int64")


def test_ceildiv():
    n = tir.SizeVar("n")
    assert as_const_int(ceildiv(tir.const(10), tir.const(4))) == 3
    assert expr(ceildiv(n * 8, tir.const(4))) == "(n * 2)"
    assert expr(ceildiv(n, tir.const(4))) == "((n + 3) // 4)"


def _exprs():
    leaves = st.one_of(st.sampled_from(VARS), st.integers(-6, 6).map(tir.const))

    def extend(children):
        pair = st.tuples(children, children)
        divisor = st.integers(1, 5).map(tir.const)
        return st.one_of(
            pair.map(lambda p: p[0] + p[1]),
            pair.map(lambda p: p[0] - p[1]),
            st.tuples(children, st.integers(-3, 3)).map(lambda p: p[0] * p[1]),
            st.tuples(children, divisor).map(lambda p: tir.FloorDiv(p[0], p[1])),
            st.tuples(children, divisor).map(lambda p: tir.FloorMod(p[0], p[1])),
            pair.map(lambda p: tir.Min(p[0], p[1])),
            pair.map(lambda p: tir.Max(p[0], p[1])),
        )

    return st.recursive(leaves, extend, max_leaves=8)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(_exprs(), st.integers(1, 4), st.integers(1, 4), st.integers(-5, 5))
def test_interval_contains_every_value(e, ext_x, ext_y, z):
    varying = {X: tir.const(ext_x), Y: tir.const(ext_y)}
    got = interval(e, varying)
    if got is None:  # not affine in the loops: lowering falls back to the whole dimension
        return
    lo, ext = got
    assert ext.is_const
    for x, y in itertools.product(range(ext_x), range(ext_y)):
        env = {X: x, Y: y, Z: z}
        low = eval_expr(from_linear(lo, INT32), env)
        assert low <= eval_expr(e, env) < low + ext.const


def test_interval_of_split_tile_and_union():
    io, ii = tir.Var("io"), tir.Var("ii")
    varying = {ii: tir.const(8)}
    a = interval(io * 8 + ii, varying)
    b = interval(io * 8 + ii + 2, varying)
    lo, ext = union(a, b)
    assert expr(from_linear(lo, INT32)) == "(io * 8)" and ext.const == 10
    assert union(a, interval(tir.const(0) + io, {})) is None


def test_interval_of_a_floor_division_of_a_tile():
    io, ii = tir.Var("io"), tir.Var("ii")
    lo, ext = interval(tir.FloorDiv(io * 8 + ii, 4), {ii: tir.const(8)})
    assert expr(from_linear(lo, INT32)) == "(io * 2)" and ext.const == 2


def test_interval_of_a_fused_symbolic_loop_divided_by_its_inner_extent():
    """``fused // 19`` over a loop of ``n * 19`` iterations is ``[0, n)``, ``fused % 19`` is
    ``[0, 19)``: exact, so a tile computed at a batch fused with a tile loop needs no guards."""
    fused, n = tir.Var("fused"), tir.Var("n")
    varying = {fused: n * 19}
    lo, ext = interval(tir.FloorDiv(fused, 19), varying)
    assert lo.is_const and lo.const == 0 and expr(from_linear(ext, INT32)) == "n"
    lo, ext = interval(tir.FloorMod(fused, 19) * 3, varying)
    assert lo.is_const and lo.const == 0 and ext.const == 55
    assert interval(tir.FloorDiv(fused, 7), varying) is None  # 7 does not divide n * 19


def test_interval_of_a_fused_loop_divided_by_a_shape_variable():
    """``fused // s // 2`` over ``b * 2 * s`` iterations is ``[0, b)`` and ``fused % s`` is
    ``[0, s)`` when ``s`` is a shape variable (non-negative): a softmax over symbolic rows
    needs no region guards. A divisor that may be negative is not reasoned about."""
    fused, b, s = tir.Var("fused", "int64"), tir.SizeVar("b", "int64"), tir.SizeVar("s", "int64")
    varying = {fused: b * 2 * s}
    lo, ext = interval(tir.FloorDiv(tir.FloorDiv(fused, s), 2), varying)
    assert lo.is_const and lo.const == 0 and expr(from_linear(ext, INT64)) == "b"
    lo, ext = interval(tir.FloorMod(fused, s), varying)
    assert lo.is_const and lo.const == 0 and expr(from_linear(ext, INT64)) == "s"
    signed = tir.Var("v", "int64")
    assert interval(tir.FloorDiv(fused, signed), {fused: b * signed}) is None
