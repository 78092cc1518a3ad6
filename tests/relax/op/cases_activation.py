"""The numpy checks of the activation records (`relax.op.nn.activation`, ``relax.nn.prelu``):
random values, and the special values where the textbook formulas break (large ``|x|`` that
overflow ``exp``, values near 0 where ``exp(x) - 1`` cancels, ``+-inf``, NaN). References are
computed in float64 from numpy's own stable functions (``logaddexp``, ``expm1``)."""

from __future__ import annotations

import numpy as np

from kiln.relax import op as R
from kiln.topi.nn.activation import SELU_ALPHA, SELU_SCALE
from tests.relax.op.harness import Case

RNG = np.random.default_rng(11)
SPECIAL = [-1e4, -100.0, -30.0, -20.5, -5.0, -1.0, -0.3, -1e-3, -1e-7, -0.0, 0.0, 1e-7, 1e-3]
SPECIAL += [0.3, 1.0, 2.9, 3.0, 3.1, 5.0, 19.5, 20.5, 30.0, 100.0, 1e4, np.inf, -np.inf, np.nan]


def _values(dtype: str = "float32") -> np.ndarray:
    """Two rows of 48: the special values, then random ones in [-8, 8]."""
    rand = RNG.uniform(-8.0, 8.0, 96 - len(SPECIAL))
    return np.concatenate([np.array(SPECIAL), rand]).reshape(2, 48).astype(dtype)


X, X64 = _values(), _values("float64")
TINY = 1e-40
"""The absolute tolerance of float32 checks whose results near 0 must be right relatively (an
``atol`` of 1e-6 would pass a softplus of -30 that came out 0); it covers subnormal results."""


def _f64(fn):
    """``fn`` computed in float64, the result in the input's dtype."""

    def ref(*arrays: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return fn(*(a.astype("float64") for a in arrays)).astype(arrays[0].dtype)

    return ref


def _double(op: str, build, ref) -> Case:
    """A float64 case: the special values against ``ref``, to a few float64 ulp."""
    return Case(op, build, [X64], _f64(ref), rtol=1e-12, atol=1e-300, name="float64")


def _softplus(x, beta=1.0, threshold=np.inf):
    return np.where(beta * x > threshold, x, np.logaddexp(0.0, beta * x) / beta)


def _elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def _sigmoid(x):
    return 0.5 * (1 + np.tanh(x / 2))


ACTIVATION = [
    Case(
        "relax.nn.softplus",
        R.nn.softplus,
        [X],
        _f64(lambda x: _softplus(x, 1.0, 20.0)),
        atol=TINY,
    ),
    Case(
        "relax.nn.softplus",
        lambda x: R.nn.softplus(x, beta=2.0, threshold=5.0),
        [X],
        _f64(lambda x: _softplus(x, 2.0, 5.0)),
        atol=TINY,
        name="beta threshold",
    ),
    _double("relax.nn.softplus", lambda x: R.nn.softplus(x, threshold=float("inf")), _softplus),
    Case(
        "relax.nn.mish",
        R.nn.mish,
        [X],
        _f64(lambda x: x * np.tanh(np.logaddexp(0.0, x))),
        atol=TINY,
    ),
    _double("relax.nn.mish", R.nn.mish, lambda x: x * np.tanh(np.logaddexp(0.0, x))),
    Case(
        "relax.nn.hardsigmoid",
        lambda x: R.nn.hardsigmoid(x, 0.25, 0.4),
        [X],
        _f64(lambda x: np.clip(0.25 * x + 0.4, 0, 1)),
    ),
    Case("relax.nn.hardswish", R.nn.hardswish, [X], _f64(lambda x: x * np.clip(x / 6 + 0.5, 0, 1))),
    Case("relax.nn.softsign", R.nn.softsign, [X], _f64(lambda x: x / (1 + np.abs(x)))),
    Case(
        "relax.nn.swish",
        lambda x: R.nn.swish(x, 1.7),
        [X],
        _f64(lambda x: x * _sigmoid(1.7 * x)),
    ),
    Case(
        "relax.nn.leakyrelu",
        lambda x: R.nn.leakyrelu(x, 0.1),
        [X],
        _f64(lambda x: np.where(x < 0, 0.1 * x, x)),
    ),
    Case(
        "relax.nn.prelu",
        R.nn.prelu,
        [RNG.uniform(-3, 3, (2, 3, 4, 5)).astype("float32"), np.float32([[[0.1]], [[0.5]], [[2]]])],
        _f64(lambda x, s: np.where(x < 0, s * x, x)),
        sym=[[0, 2], []],
    ),
    Case(
        "relax.nn.prelu",
        R.nn.prelu,
        [X, np.float32([0.25])],
        _f64(lambda x, s: np.where(x < 0, s * x, x)),
        name="scalar slope",
    ),
    Case(
        "relax.nn.prelu",
        R.nn.prelu,
        [RNG.integers(-9, 9, (3, 4)).astype("int32"), np.int32([2, -1, 0, 3])],
        lambda x, s: np.where(x < 0, s * x, x),
        name="int",
    ),
    Case(
        "relax.nn.elu",
        lambda x: R.nn.elu(x, 0.7),
        [X],
        _f64(lambda x: _elu(x, 0.7)),
        atol=TINY,
    ),
    _double("relax.nn.elu", R.nn.elu, _elu),
    Case(
        "relax.nn.selu",
        R.nn.selu,
        [X],
        _f64(lambda x: SELU_SCALE * _elu(x, SELU_ALPHA)),
        atol=TINY,
    ),
    Case(
        "relax.nn.celu",
        lambda x: R.nn.celu(x, 1.5),
        [X],
        _f64(lambda x: np.where(x > 0, x, 1.5 * np.expm1(np.minimum(x, 0) / 1.5))),
        atol=TINY,
    ),
    Case(
        "relax.nn.thresholded_relu",
        lambda x: R.nn.thresholded_relu(x, 0.5),
        [X],
        _f64(lambda x: np.where(x > 0.5, x, 0)),
    ),
    Case(
        "relax.nn.shrink",
        lambda x: R.nn.shrink(x, 1.0, 0.2),
        [X],
        _f64(lambda x: np.where(x < -1, x + 0.2, np.where(x > 1, x - 0.2, 0))),
    ),
]
