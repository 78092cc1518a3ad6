"""The affine index helper and bound inference: exact rewrites, and soundness as properties."""

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from kiln import tir
from kiln.te.bound import interval, union
from kiln.te.linear import ceildiv, const_value, expr_key, simplify_index, to_affine
from tests.te.tir_interp import eval_expr
from tests.te.tir_text import expr

X, Y, Z = tir.Var("x"), tir.Var("y"), tir.Var("z")
VARS = (X, Y, Z)


def test_cancellation_and_folding():
    io, ii = tir.Var("io"), tir.Var("ii")
    assert expr(simplify_index(io * 4 + ii - io * 4)) == "ii"
    assert expr(simplify_index((io * 4 + ii) - (ii + 3))) == "((io * 4) - 3)"
    assert const_value(simplify_index(tir.const(7) * 3 - 1)) == 20
    assert expr(simplify_index(tir.FloorDiv(io * 8 + ii, 4))) == "((io * 2) + (ii // 4))"
    assert expr(simplify_index(tir.FloorMod(io * 8 + ii + 5, 4))) == "((ii + 1) % 4)"
    assert expr(simplify_index(tir.Min(io + 2, io + 5))) == "(io + 2)"


def test_ceildiv():
    n = tir.SizeVar("n")
    assert const_value(ceildiv(tir.const(10), 4)) == 3
    assert expr(ceildiv(n * 8, 4)) == "(n * 2)"
    assert expr(ceildiv(n, 4)) == "((n + 3) // 4)"


def test_structural_keys_merge_equal_atoms():
    a = tir.FloorDiv(X, tir.const(3))
    b = tir.FloorDiv(X, tir.const(3))
    assert expr_key(a) == expr_key(b)
    assert const_value((to_affine(a) - to_affine(b)).to_expr()) == 0


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


@settings(max_examples=300, deadline=None)
@given(_exprs(), st.tuples(*[st.integers(-20, 20)] * 3))
def test_simplify_preserves_value(e, values):
    env = dict(zip(VARS, values))
    assert eval_expr(simplify_index(e), env) == eval_expr(e, env)


@settings(max_examples=300, deadline=None)
@given(_exprs(), st.integers(1, 4), st.integers(1, 4), st.integers(-5, 5))
def test_interval_contains_every_value(e, ext_x, ext_y, z):
    varying = {expr_key(X): tir.const(ext_x), expr_key(Y): tir.const(ext_y)}
    got = interval(e, varying)
    if got is None:  # not affine in the loops: lowering falls back to the whole dimension
        return
    lo, ext = got
    assert ext.is_const
    for x, y in itertools.product(range(ext_x), range(ext_y)):
        env = {X: x, Y: y, Z: z}
        low = eval_expr(lo.to_expr(), env)
        assert low <= eval_expr(e, env) < low + ext.const


def test_interval_of_split_tile_and_union():
    io, ii = tir.Var("io"), tir.Var("ii")
    varying = {expr_key(ii): tir.const(8)}
    a = interval(io * 8 + ii, varying)
    b = interval(io * 8 + ii + 2, varying)
    lo, ext = union(a, b)
    assert expr(lo.to_expr()) == "(io * 8)" and ext.const == 10
    assert union(a, interval(tir.const(0) + io, {})) is None
