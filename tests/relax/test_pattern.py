"""The rewrite-rule language (`kiln.relax.pattern`): what patterns match and bind, and what the
driver does with rules (bottom-up replacement, identity when nothing applies, dead bindings
removed, the errors of a rule that changes a value's struct info or never settles)."""

# ruff: noqa: F841 - names in R scripts are script variables, not Python locals

from __future__ import annotations

import numpy as np
import pytest

from kiln.errors import IRError, IRValueError
from kiln.ir import assert_structural_equal
from kiln.relax import op as O
from kiln.relax.binding import VarBinding
from kiln.relax.expr import Expr, Function, Var
from kiln.relax.pattern import (
    Match,
    P,
    Rule,
    all_elements_are,
    is_const,
    is_op,
    is_tuple_get,
    rewrite,
    rule,
)
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T


@I.ir_module
class Sample:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), w: R.Tensor((4, 4), "float32")):
        with R.dataflow():
            a = R.exp(x)
            b = R.add(a, a)
            c = R.add(a, x)
            d = R.permute_dims(w, axes=[1, 0])
            e = R.multiply(b, R.const([1.0, 1.0, 1.0, 1.0], "float32"))
            f = R.split(c, 2, axis=1)
            g = f[1]
            R.output(b, c, d, e, g)
        return (b, c, d, e, g)


def _bindings() -> tuple[dict[str, Expr], dict[int, Expr]]:
    """Sample's values by name, and the look-through table the driver would hold."""
    main = Sample["main"]
    assert isinstance(main, Function)
    bs = [b for b in main.body.blocks[0].bindings if isinstance(b, VarBinding)]
    return {b.var.name_hint: b.value for b in bs}, {id(b.var): b.value for b in bs}


def test_a_pattern_looks_through_variables_and_binds_them_as_written() -> None:
    v, defs = _bindings()
    pat = is_op("relax.add")(is_op("relax.exp")(P.x).named("e"), P.y)
    m = pat.match(v["c"], defs)
    assert m is not None and m.root is v["c"]
    assert isinstance(m.e, Var) and m.e.name_hint == "a" and m.value("e") is v["a"]
    assert m.x.name_hint == "x" and m["y"].name_hint == "x"
    assert pat.match(v["c"]) is None  # without the table, ``a`` is only a variable


def test_a_name_bound_twice_must_be_the_same_expression() -> None:
    v, defs = _bindings()
    twice = is_op("relax.add")(P.x, P.x)
    assert twice.match(v["b"], defs) is not None
    assert twice.match(v["c"], defs) is None


def test_alternatives_drop_the_bindings_of_a_failed_branch() -> None:
    v, defs = _bindings()
    pat = is_op("relax.add")(P.x, is_const()) | is_op("relax.add")(P.y, P.z)
    m = pat.match(v["c"], defs)
    assert m is not None and "x" not in m and m.z.name_hint == "x"
    with pytest.raises(IRError, match=r"bound no 'x'; it bound \['y', 'z'\]"):
        _ = m.x


def test_attributes_constants_and_tuple_fields() -> None:
    v, defs = _bindings()
    assert is_op("relax.permute_dims", axes=[1, 0])(P.w).match(v["d"], defs) is not None
    assert is_op("relax.permute_dims", axes=[0, 1]).match(v["d"], defs) is None
    m = is_op("relax.permute_dims", axes=P.axes).match(v["d"], defs)
    assert m is not None and tuple(m.axes) == (1, 0)
    ones = is_op("relax.multiply")(P.b, is_const(1.0).named("one"))
    m = ones.match(v["e"], defs)
    assert m is not None and list(m.one.data) == [1.0] * 4
    assert is_op("relax.multiply")(P.b, is_const(2.0)).match(v["e"], defs) is None
    big = is_const(pred=lambda data: data.size > 4)
    assert is_op("relax.multiply")(P.b, big).match(v["e"], defs) is None
    split = is_tuple_get(is_op("relax.split", axis=1)(P.c), 1)
    assert split.match(v["g"], defs) is not None
    assert is_tuple_get(is_op("relax.split"), 0).match(v["g"], defs) is None


def test_constant_values_tell_the_zeros_apart() -> None:
    assert all_elements_are(np.array([0.0, 0.0], "float32"), 0.0)
    assert not all_elements_are(np.array([0.0, -0.0], "float32"), 0.0)
    assert all_elements_are(np.array([-0.0], "float32"), -0.0)
    assert not all_elements_are(np.array([0.0], "float32"), -0.0)
    assert all_elements_are(np.array([0, 0], "int32"), 0)
    assert all_elements_are(np.array([0], "int32"), -0.0)  # an integer zero has no sign
    assert not all_elements_are(np.zeros((0,), "float32"), 0.0)


def test_struct_info_checks() -> None:
    v, defs = _bindings()
    x = P.x
    assert is_op("relax.exp")(x.has_dtype("float32").has_ndim(2)).match(v["a"]) is not None
    assert is_op("relax.exp")(x.has_dtype("float16")).match(v["a"]) is None
    main = Sample["main"]
    assert isinstance(main, Function)
    n = main.params[0].struct_info.dims[0]  # type: ignore[attr-defined]
    assert is_op("relax.exp")(x.has_shape([n, 4])).match(v["a"]) is not None
    assert is_op("relax.exp")(x.has_shape([None, 4])).match(v["a"]) is not None
    assert is_op("relax.exp")(x.has_shape([4, 4])).match(v["a"]) is None
    assert is_op("relax.exp")(x.where(lambda e: e.name_hint == "w")).match(v["a"]) is None


def test_a_rule_needs_a_pattern_and_an_operator_that_exists() -> None:
    with pytest.raises(IRError, match="needs a pattern"):
        Rule("relax.exp", lambda m: None)  # type: ignore[arg-type]
    with pytest.raises(IRValueError, match="unknown operator .relax.expp."):
        is_op("relax.expp")


@rule(is_op("relax.negative")(is_op("relax.negative")(P.x)))
def double_negative(m: Match) -> Expr | None:
    return m.x


@rule(is_op("relax.subtract")(P.x, P.y))
def subtract_as_add(m: Match) -> Expr | None:
    return O.add(m.x, O.negative(m.y))


def test_replacements_are_simplified_bottom_up_and_dead_bindings_go() -> None:
    """``a - (-b)`` becomes ``a + (-(-b))``, whose nested part the rules see before it is
    bound (``-(-b)`` is ``b``); ``-b`` is then read by nothing and goes."""

    @I.ir_module
    class Before:
        @R.function
        def main(a: R.Tensor((4,), "float32"), b: R.Tensor((4,), "float32")):
            with R.dataflow():
                n = R.negative(b)
                c = R.subtract(a, n)
                d = R.exp(c)
                R.output(d)
            return d

    @I.ir_module
    class Expected:
        @R.function
        def main(a: R.Tensor((4,), "float32"), b: R.Tensor((4,), "float32")):
            with R.dataflow():
                c = R.add(a, b)
                d = R.exp(c)
                R.output(d)
            return d

    after = rewrite(Before, [subtract_as_add, double_negative])
    assert_structural_equal(after, Expected)
    assert rewrite(after, [subtract_as_add, double_negative]) is after
    assert rewrite(after["main"], [double_negative], after) is after["main"]


def test_a_block_output_replaced_by_a_dataflow_variable_takes_over_its_binding() -> None:
    @I.ir_module
    class Before:
        @R.function
        def main(a: R.Tensor((4,), "float32")):
            with R.dataflow():
                n = R.negative(a)
                m = R.exp(n)
                k = R.negative(m)
                d = R.negative(k)
                R.output(d)
            return d

    @I.ir_module
    class Expected:
        @R.function
        def main(a: R.Tensor((4,), "float32")):
            with R.dataflow():
                n = R.negative(a)
                d = R.exp(n)
                R.output(d)
            return d

    assert_structural_equal(rewrite(Before, [double_negative]), Expected)


def test_rules_look_through_bindings_of_the_same_block_only() -> None:
    @I.ir_module
    class Before:
        @R.function
        def main(a: R.Tensor((4,), "float32")):
            with R.dataflow():
                n = R.negative(a)
                R.output(n)
            with R.dataflow():
                d = R.negative(n)
                R.output(d)
            return d

    assert rewrite(Before, [double_negative]) is Before


def test_a_rule_that_changes_a_value_or_never_settles_is_named() -> None:
    @I.ir_module
    class Before:
        @R.function
        def main(a: R.Tensor((2, 4), "float32")):
            with R.dataflow():
                d = R.exp(a)
                R.output(d)
            return d

    @rule(is_op("relax.exp")(P.x))
    def exp_as_sum(m: Match) -> Expr | None:
        return O.sum(m.x)

    with pytest.raises(IRValueError, match="exp_as_sum.*keep the value's dtype and shape"):
        rewrite(Before, [exp_as_sum])

    @rule(is_op("relax.exp")(P.x))
    def exp_again(m: Match) -> Expr | None:
        return O.exp(m.x)

    with pytest.raises(IRValueError, match=r"\['exp_again'\] replaced .* 64 times"):
        rewrite(Before, [exp_again])


def test_rewrite_takes_a_function_or_a_module() -> None:
    with pytest.raises(IRError, match="a relax Function or an IRModule"):
        rewrite(T.int64(), [double_negative])
