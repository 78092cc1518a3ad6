"""Element-wise operators against numpy: unary math per dtype, broadcasting binary arithmetic,
casts, patterns, and the errors for bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kiln import te, topi
from kiln.errors import IRError, IRValueError, KilnError
from kiln.topi import Pattern, pattern_of
from tests.topi.conftest import run

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


UNARY = {
    "relu": (topi.relu, lambda v: np.maximum(v, 0)),
    "exp": (topi.exp, np.exp),
    "sigmoid": (topi.sigmoid, lambda v: 1 / (1 + np.exp(-v))),
    "tanh": (topi.tanh, np.tanh),
    "erf": (topi.erf, _erf),
    "gelu": (topi.gelu, _gelu),
    "gelu_tanh": (lambda t: topi.gelu(t, approximate="tanh"), _gelu_tanh),
    "clip": (lambda t: topi.clip(t, -0.5, 0.75), lambda v: np.clip(v, -0.5, 0.75)),
    "negative": (topi.negative, np.negative),
    "abs": (topi.abs, np.abs),
    "sqrt": (lambda t: topi.sqrt(topi.abs(t)), lambda v: np.sqrt(np.abs(v))),
    "log": (lambda t: topi.log(topi.abs(t)), lambda v: np.log(np.abs(v))),
}


@pytest.mark.parametrize(
    "dtype, shape, rtol",
    [("float32", (7, 37), 2e-6), ("float64", (3, 5, 11), 1e-12), ("float16", (19,), 2e-3)],
)
def test_unary_float_ops(dtype: str, shape: tuple[int, ...], rtol: float, rng) -> None:
    x = te.placeholder(shape, dtype, name="x")
    names = list(UNARY)
    outs = [UNARY[n][0](x) for n in names]
    a = (rng.standard_normal(shape) * 2).astype(dtype)
    got = run(outs, [x], a)
    for n, g in zip(names, got):
        want = UNARY[n][1](a.astype("float64"))
        atol = 2e-3 if dtype == "float16" else 1e-6
        np.testing.assert_allclose(g.astype("float64"), want, rtol=rtol, atol=atol, err_msg=n)


def test_integer_unary_ops(rng) -> None:
    x = te.placeholder((5, 17), "int32", name="x")
    outs = [topi.relu(x), topi.abs(x), topi.negative(x), topi.clip(x, -3, 4)]
    a = rng.integers(-20, 20, (5, 17)).astype("int32")
    got = run(outs, [x], a)
    for g, w in zip(got, [np.maximum(a, 0), np.abs(a), -a, np.clip(a, -3, 4)]):
        np.testing.assert_array_equal(g, w)


BINARY = {
    "add": (topi.add, np.add),
    "subtract": (topi.subtract, np.subtract),
    "multiply": (topi.multiply, np.multiply),
    "divide": (topi.divide, np.divide),
    "maximum": (topi.maximum, np.maximum),
    "minimum": (topi.minimum, np.minimum),
    "power": (topi.power, np.power),
}


@pytest.mark.parametrize(
    "sa, sb",
    [
        ((17,), (17,)),
        ((4, 1, 5), (3, 1)),
        ((2, 3, 33), (33,)),
        ((1,), (5, 6)),
        ((5, 1), (1, 7)),
    ],
)
def test_broadcast_binary_ops(sa: tuple[int, ...], sb: tuple[int, ...], rng) -> None:
    a_t = te.placeholder(sa, name="a")
    b_t = te.placeholder(sb, name="b")
    names = list(BINARY)
    outs = [BINARY[n][0](a_t, b_t) for n in names]
    a = rng.uniform(0.5, 2.0, sa).astype("float32")
    b = rng.uniform(-2.0, 2.0, sb).astype("float32")
    got = run(outs, [a_t, b_t], a, b)
    for n, g in zip(names, got):
        np.testing.assert_allclose(g, BINARY[n][1](a, b), rtol=2e-6, err_msg=n)


def test_scalar_operands_and_integer_arithmetic(rng) -> None:
    x = te.placeholder((9, 20), name="x")
    i = te.placeholder((9, 20), "int32", name="i")
    outs = [
        topi.add(x, 2.5),
        topi.multiply(3, x),
        topi.subtract(1.0, x),
        topi.add(i, 7),
        topi.multiply(i, i),
        topi.maximum(i, 0),
        topi.subtract(i, topi.minimum(i, 3)),
    ]
    a = rng.standard_normal((9, 20)).astype("float32")
    n = rng.integers(-50, 50, (9, 20)).astype("int32")
    got = run(outs, [x, i], a, n)
    want = [a + 2.5, 3 * a, 1 - a, n + 7, n * n, np.maximum(n, 0), n - np.minimum(n, 3)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_cast(rng) -> None:
    x = te.placeholder((6, 21), name="x")
    i = te.placeholder((6, 21), "int32", name="i")
    outs = [
        topi.cast(x, "int32"),
        topi.cast(x, "float64"),
        topi.cast(x, "float16"),
        topi.cast(i, "float32"),
        topi.cast(x, "float32"),
    ]
    a = (rng.standard_normal((6, 21)) * 50).astype("float32")
    n = rng.integers(-1000, 1000, (6, 21)).astype("int32")
    got = run(outs, [x, i], a, n)
    np.testing.assert_array_equal(got[0], a.astype("int32"))
    np.testing.assert_array_equal(got[1], a.astype("float64"))
    np.testing.assert_array_equal(got[2], a.astype("float16"))
    np.testing.assert_array_equal(got[3], n.astype("float32"))
    np.testing.assert_array_equal(got[4], a)


def test_symbolic_shape_broadcast(rng) -> None:
    n = te.size_var("n")
    x = te.placeholder((n, 19), name="x")
    b = te.placeholder((19,), name="b")
    y = topi.relu(topi.add(x, b))
    a, bv = (
        rng.standard_normal((13, 19)).astype("float32"),
        rng.standard_normal(19).astype("float32"),
    )
    out = np.zeros((13, 19), "float32")
    from tests.topi.conftest import build

    build(y, [x, b])(a, bv, out)
    np.testing.assert_allclose(out, np.maximum(a + bv, 0), rtol=1e-6)


def test_patterns() -> None:
    a = te.placeholder((4, 5), name="a")
    b = te.placeholder((5,), name="b")
    assert pattern_of(topi.add(a, a)) == Pattern.ELEMWISE
    assert pattern_of(topi.add(a, b)) == Pattern.BROADCAST
    assert pattern_of(topi.add(a, 1.0)) == Pattern.ELEMWISE
    assert pattern_of(topi.exp(a)) == Pattern.ELEMWISE
    assert pattern_of(topi.cast(a, "int8")) == Pattern.ELEMWISE
    assert topi.relu(a).op.tag == "elemwise"


# -- bad input ----------------------------------------------------------------------------------
def test_broadcast_mismatch_names_op_and_tensors() -> None:
    a = te.placeholder((4, 3), name="lhs")
    b = te.placeholder((5,), name="rhs")
    with pytest.raises(KilnError, match=r"add: cannot broadcast .*'lhs'.*'rhs'"):
        topi.add(a, b)


def test_dtype_mismatch() -> None:
    a = te.placeholder((4,), "float32", name="a")
    b = te.placeholder((4,), "float64", name="b")
    with pytest.raises(IRError, match=r"multiply: tensor 'a' has dtype float32 but tensor 'b'"):
        topi.multiply(a, b)


@pytest.mark.parametrize(
    "call, pattern",
    [
        (lambda i: topi.exp(i), r"exp: tensor 'i' has dtype int32, which is not supported"),
        (lambda i: topi.divide(i, i), r"divide: tensor 'i' has dtype int32"),
        (lambda i: topi.gelu(i), r"gelu: tensor 'i' has dtype int32"),
        (lambda i: topi.add(i, 0.5), r"add: the float 0.5 cannot be combined with a int32"),
        (lambda i: topi.add(1, 2), r"add: needs at least one te.Tensor"),
        (lambda i: topi.relu([1, 2]), r"relu: input must be a te.Tensor"),
        (lambda i: topi.cast(i, "float33"), r"cast: .*float33"),
        (lambda i: topi.clip(i, 3, 1), r"clip: a_min 3 is greater than a_max 1"),
    ],
)
def test_bad_inputs(call, pattern: str) -> None:
    i = te.placeholder((3, 4), "int32", name="i")
    with pytest.raises((IRError, IRValueError), match=pattern):
        call(i)


def test_unsupported_storage_dtypes() -> None:
    h = te.placeholder((8,), "bfloat16", name="h")
    with pytest.raises(IRError, match=r"exp: tensor 'h' has dtype bfloat16"):
        topi.exp(h)
    with pytest.raises(IRError, match=r"add: tensor 'h' has dtype bfloat16"):
        topi.add(h, h)
    with pytest.raises(IRValueError, match=r"gelu: approximate must be"):
        topi.gelu(te.placeholder((2,), name="x"), approximate="fast")
