"""The fused approximations of kiln.tir.math_approx that topi calls directly (`exp_nonpositive`
for softmax, `gelu` for float32 GELU), compiled vectorized and scalar, against float64 numpy /
math over dense samples, the ends of their ranges and the special values."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import kiln
from kiln import te
from kiln.tir import math_approx

M = 1 << 18
EXP_MAX_ULP = 2.0
"""`exp_nonpositive` over ``[-87.3, 0]`` (measured 1.95 ulp, degree-5 polynomial)."""
GELU_MAX_ABS = 1e-6
"""`gelu` absolute error (measured 8.9e-7 here, 9.4e-7 over bench_topi_ops' inputs; at ``|x|``
near 5, where the result's own rounding is 2.4e-7)."""


def _build(fn: Callable[[Any], Any], vectorize: bool) -> Callable[..., Any]:
    x = te.placeholder((M,), name="x")
    y = te.compute((M,), lambda i: fn(x[i]), name="y")
    s = te.create_schedule([y])
    if vectorize:
        _, inner = s[y].split(y.op.axis[0], factor=16)
        s[y].vectorize(inner)
    return kiln.build(te.lower(s, [x, y], name="main"))["main"]


def _run(fn: Callable[[Any], Any], x: np.ndarray, vectorize: bool) -> np.ndarray:
    y = np.zeros_like(x)
    _build(fn, vectorize)(x, y)
    return y


def _exp_inputs() -> np.ndarray:
    dense = np.linspace(math_approx.EXP_NONPOSITIVE_LO, 0.0, M - 8)
    ends = [math_approx.EXP_NONPOSITIVE_LO, -87.0, -0.34657359, -0.3465736, -1e-30, -0.0, 0.0]
    return np.concatenate([ends, dense, [-1e-7]]).astype("float32")


@pytest.mark.parametrize("vectorize", [True, False])
def test_exp_nonpositive_is_within_2_ulp(vectorize: bool) -> None:
    x = _exp_inputs()
    y = _run(math_approx.exp_nonpositive, x, vectorize)
    want = np.exp(x.astype("float64"))
    ulp = np.spacing(want.astype("float32")).astype("float64")
    err = np.abs(y - want) / ulp
    assert err.max() <= EXP_MAX_ULP, (err.max(), x[err.argmax()])
    assert np.all(y[x == 0] == 1.0)
    assert np.all(np.isfinite(y)) and y.min() > 0  # normal results down to the range end


def _gelu64(x: np.ndarray) -> np.ndarray:
    erf = np.vectorize(math.erf, otypes=[float])
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


@pytest.mark.parametrize("vectorize", [True, False])
def test_gelu_absolute_error_is_below_1e_6(vectorize: bool) -> None:
    big = math_approx.GELU_BIG
    ends = [big, -big, np.nextafter(big, 9), np.nextafter(-big, -9), 6.0, -6.0, 0.0, -0.0]
    x = np.concatenate([ends, np.linspace(-8.0, 8.0, M - len(ends))]).astype("float32")
    y = _run(math_approx.gelu, x, vectorize)
    err = np.abs(y - _gelu64(x.astype("float64")))
    assert err.max() < GELU_MAX_ABS, (err.max(), x[err.argmax()])
    tail = np.abs(x) > big
    np.testing.assert_array_equal(y[tail], np.where(x[tail] > 0, x[tail], 0.0))


@pytest.mark.parametrize("vectorize", [True, False])
def test_gelu_special_values_follow_the_unfused_formula(vectorize: bool) -> None:
    x = np.zeros(M, "float32")
    x[:6] = [np.nan, np.inf, -np.inf, 3e38, -3e38, 1e-30]
    y = _run(math_approx.gelu, x, vectorize)[:6]
    assert np.isnan(y[0]) and y[1] == np.inf and np.isnan(y[2])  # -inf * 0, as 0.5*x*(1+erf)
    assert y[3] == np.float32(3e38) and y[4] == 0.0 and y[5] == np.float32(5e-31)
