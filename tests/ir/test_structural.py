"""structural_equal / structural_hash: round trips, binders by definition position, diffs."""

import pytest

from kiln import tir
from kiln.ir import (
    assert_structural_equal,
    first_mismatch,
    structural_equal,
    structural_hash,
)
from tests.tir.builders import caller_module, matmul_relu, symbolic_add


@pytest.mark.parametrize("make", [matmul_relu, caller_module, symbolic_add])
def test_fresh_builds_are_equal_and_hash_alike(make):
    a, b = make(), make()
    assert a is not b
    assert structural_equal(a, b) and structural_hash(a) == structural_hash(b)
    assert_structural_equal(a, b)


def test_names_do_not_matter_definitions_do():
    x, y = tir.Var("x"), tir.Var("renamed")
    f1 = tir.PrimFunc((x,), tir.Evaluate(x + 1))
    f2 = tir.PrimFunc((y,), tir.Evaluate(y + 1))
    assert structural_equal(f1, f2) and structural_hash(f1) == structural_hash(f2)


def test_two_vars_with_one_name_stay_distinct():
    a, b = tir.Var("i"), tir.Var("i")
    uses_both = tir.PrimFunc((a, b), tir.Evaluate(a - b))
    c = tir.Var("i")
    uses_one = tir.PrimFunc((c, tir.Var("i")), tir.Evaluate(c - c))
    assert not structural_equal(uses_both, uses_one)
    assert structural_hash(uses_both) != structural_hash(uses_one)


def test_swapped_parameters_differ():
    a, b = tir.Var("a"), tir.Var("b")
    f1 = tir.PrimFunc((a, b), tir.Evaluate(a - b))
    c, d = tir.Var("a"), tir.Var("b")
    f2 = tir.PrimFunc((c, d), tir.Evaluate(d - c))
    assert not structural_equal(f1, f2)
    path, lhs, rhs, why = first_mismatch(f1, f2)
    assert path == ".body.value.a" and "different definitions" in why


def test_free_vars_need_map_free_vars():
    e1, e2 = tir.Var("x") + 1, tir.Var("x") + 1
    assert not structural_equal(e1, e2)
    assert structural_equal(e1, e2, map_free_vars=True)
    assert structural_hash(e1, map_free_vars=True) == structural_hash(e2, map_free_vars=True)


def test_constants_dtypes_and_loop_kinds_matter():
    base = matmul_relu(8)
    assert not structural_equal(base, matmul_relu(16))
    i = tir.Var("i")
    s1 = tir.For(i, 0, 4, tir.ForKind.SERIAL, tir.Evaluate(i))
    s2 = tir.For(i, 0, 4, tir.ForKind.PARALLEL, tir.Evaluate(i))
    assert not structural_equal(s1, s2)
    assert not structural_equal(tir.const(1, "int32"), tir.const(1, "int64"))


def test_module_comparison_matches_functions_by_name():
    m1, m2 = caller_module(), caller_module()
    assert structural_equal(m1, m2)
    assert not structural_equal(m1, m2.remove("main"))
    assert not structural_equal(m1, m1.with_attr("k", 1))


def test_assert_structural_equal_shows_the_first_difference():
    with pytest.raises(AssertionError) as e:
        assert_structural_equal(matmul_relu(8), matmul_relu(16))
    msg = str(e.value)
    assert "buffer_map" in msg and "8 vs 16" in msg and "lhs at that spot" in msg


def test_global_var_callee_compared_by_name():
    m = caller_module()
    renamed = m.remove("subroutine").update("other", m["subroutine"])
    assert not structural_equal(m, renamed)


def test_undeclared_buffer_views_match_through_their_data_pointer():
    def make():
        p = tir.Var("p", tir.pointer_to("float32"))
        view = tir.decl_buffer((4,), "float32", "B", data=p)
        return tir.PrimFunc((p,), tir.BufferStore(view, view[1], (0,)))

    assert structural_equal(make(), make())
    assert structural_hash(make()) == structural_hash(make())


def test_attribute_order_does_not_matter():
    from kiln.ir import Attrs

    assert structural_equal(Attrs({"a": 1, "b": 2}), Attrs({"b": 2, "a": 1}))
    assert structural_hash(Attrs({"a": 1, "b": 2})) == structural_hash(Attrs({"b": 2, "a": 1}))
    f = tir.PrimFunc((), tir.Evaluate(0))
    assert structural_equal(f.with_attr({"x": 1, "y": 2}), f.with_attr({"y": 2, "x": 1}))
