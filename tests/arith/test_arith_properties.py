"""Property tests of kiln.arith against an exact evaluator (see arith_eval.py).

Random expression trees over a few variables (negative values included) are simplified under
random bounds and evaluated at random points inside those bounds. Points where the original
expression overflows its dtype are skipped (undefined in C); everywhere else the simplified
expression must give exactly the same value (without overflowing itself), have the same dtype,
and be a fixpoint of the simplifier.

The ``near_limits`` tests do the same with bounds and constants around ``+-2**30`` / ``+-2**31``
(``2**62`` / ``2**63`` for int64), where a rearranged form can overflow although the input does
not. All tests are derandomized (the same cases on every run): 22,500 cases in all.
"""

from __future__ import annotations

from arith_eval import (
    Case,
    Overflow,
    bool_exprs,
    cases,
    evaluate,
    int_exprs,
    make_vars,
    near_limit_cases,
    show,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kiln.arith import Analyzer, const_int_bound
from kiln.ir import structural_equal
from kiln.tir import Cast, PrimExpr

VARS32 = make_vars("int32")
VARS64 = make_vars("int64")
SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def _check_same_value(e: PrimExpr, case: Case) -> None:
    an = Analyzer(case.bounds)
    s = an.simplify(e)
    assert s.dtype == e.dtype, f"{show(e)} -> {show(s)}: dtype {e.dtype} became {s.dtype}"
    again = an.simplify(s)
    assert structural_equal(s, again), f"not idempotent: {show(e)} -> {show(s)} -> {show(again)}"
    assert not an.hit_step_limit, f"rule loop while simplifying {show(e)}"
    for env in case.points:
        try:
            want = evaluate(e, env)
        except Overflow:
            continue
        got = evaluate(s, env)
        where = {v.name: x for v, x in env.items()}
        assert got == want, f"{show(e)} -> {show(s)} at {where}: {want} != {got}"


@settings(max_examples=1800, **SETTINGS)
@given(e=int_exprs(VARS32), case=cases(VARS32))
def test_simplify_keeps_value_int32(e: PrimExpr, case: Case) -> None:
    _check_same_value(e, case)


@settings(max_examples=400, **SETTINGS)
@given(e=int_exprs(VARS64), case=cases(VARS64))
def test_simplify_keeps_value_int64(e: PrimExpr, case: Case) -> None:
    _check_same_value(e, case)


@settings(max_examples=600, **SETTINGS)
@given(e=bool_exprs(VARS32), case=cases(VARS32))
def test_simplify_keeps_truth_of_conditions(e: PrimExpr, case: Case) -> None:
    _check_same_value(e, case)


@settings(max_examples=700, **SETTINGS)
@given(e=st.one_of(int_exprs(VARS32), bool_exprs(VARS32)), case=cases(VARS32))
def test_const_int_bound_holds_the_value(e: PrimExpr, case: Case) -> None:
    _check_bound(e, case)


def _check_bound(e: PrimExpr, case: Case) -> None:
    b = const_int_bound(e, case.bounds)
    for env in case.points:
        try:
            v = evaluate(e, env)
        except Overflow:
            continue
        assert b.contains(v), f"{show(e)} = {v} outside {b} at {env}"


@settings(max_examples=700, **SETTINGS)
@given(cond=bool_exprs(VARS32), case=cases(VARS32))
def test_can_prove_never_proves_a_false_statement(cond: PrimExpr, case: Case) -> None:
    _check_proof(cond, case)


def _check_proof(cond: PrimExpr, case: Case) -> None:
    an = Analyzer(case.bounds)
    proved = an.can_prove(cond)
    for env in case.points:
        try:
            holds = evaluate(cond, env)
        except Overflow:
            continue
        assert not proved or holds, f"proved {show(cond)} but it fails at {env}"


@settings(max_examples=300, **SETTINGS)
@given(cond=bool_exprs(VARS32, 2), e=int_exprs(VARS32, 3), case=cases(VARS32, n_points=8))
def test_constraint_scope_is_sound(cond: PrimExpr, e: PrimExpr, case: Case) -> None:
    an = Analyzer(case.bounds)
    with an.constraint_scope(an.simplify(cond)):
        s = an.simplify(e)
    for env in case.points:
        try:
            if not evaluate(cond, env):
                continue
            want = evaluate(e, env)
        except Overflow:
            continue
        assert evaluate(s, env) == want, f"assuming {show(cond)}: {show(e)} -> {show(s)} at {env}"


@settings(max_examples=500, **SETTINGS)
@given(e=int_exprs(VARS32), case=cases(VARS32))
def test_widening_cast_keeps_value(e: PrimExpr, case: Case) -> None:
    _check_same_value(Cast("int64", e), case)


# -- near the limits --------------------------------------------------------------------------


@settings(max_examples=5500, **SETTINGS)
@given(ec=near_limit_cases(VARS32))
def test_near_limits_simplify_keeps_value_int32(ec: tuple[PrimExpr, Case]) -> None:
    _check_same_value(*ec)


@settings(max_examples=2000, **SETTINGS)
@given(ec=near_limit_cases(VARS64))
def test_near_limits_simplify_keeps_value_int64(ec: tuple[PrimExpr, Case]) -> None:
    _check_same_value(*ec)


@settings(max_examples=3000, **SETTINGS)
@given(ec=near_limit_cases(VARS32, boolean=True))
def test_near_limits_simplify_keeps_truth_of_conditions(ec: tuple[PrimExpr, Case]) -> None:
    _check_same_value(*ec)


@settings(max_examples=3000, **SETTINGS)
@given(ec=near_limit_cases(VARS32))
def test_near_limits_const_int_bound_holds_the_value(ec: tuple[PrimExpr, Case]) -> None:
    _check_bound(*ec)


@settings(max_examples=2500, **SETTINGS)
@given(ec=near_limit_cases(VARS32, boolean=True))
def test_near_limits_can_prove_never_proves_a_false_statement(ec: tuple[PrimExpr, Case]) -> None:
    _check_proof(*ec)


@settings(max_examples=1500, **SETTINGS)
@given(ec=near_limit_cases(VARS32))
def test_near_limits_widening_cast_keeps_value(ec: tuple[PrimExpr, Case]) -> None:
    e, case = ec
    _check_same_value(Cast("int64", e), case)
