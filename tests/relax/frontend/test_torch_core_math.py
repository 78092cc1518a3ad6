"""Core ATen element-wise math, logic and reductions through torch.export against eager
PyTorch: each test is one module returning many ops' results, compiled once. Operands hold
negative values, signed zeros, +-inf and NaN (and zero divisors) where the op defines them."""

from __future__ import annotations

import numpy as np
import pytest

from tests.relax.frontend.torch_core import EXACT, MATH, Fn, check, stacked

torch = pytest.importorskip("torch")
A = torch.ops.aten  # NOTE: the Scalar overloads are called by name: x + 2.5 exports add.Tensor
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

RNG = np.random.default_rng(3)
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.5, 7.25]
X = torch.from_numpy(np.vstack([SPECIAL, RNG.uniform(-3, 3, (2, 8))]).astype("float32"))
Y = torch.from_numpy(np.vstack([[2.0, -1.0, 3.0, 0.0, 2.0, 0.0, -0.5, 2.0],
                                RNG.uniform(-3, 3, (2, 8))]).astype("float32"))  # fmt: skip
U = torch.from_numpy(RNG.uniform(-0.95, 0.95, (3, 8)).astype("float32"))  # inside (-1, 1)
I = torch.from_numpy(RNG.integers(-20, 20, (3, 8)).astype("int64"))
J = torch.from_numpy(np.array([[3, -4, 5, 7, -2, 1, 9, -6]] * 3, "int64"))

COVERS = {
    "test_exact_element_wise": [
        "aten.add.Tensor", "aten.add.Scalar", "aten.sub.Tensor", "aten.sub.Scalar",
        "aten.mul.Tensor", "aten.mul.Scalar", "aten.div.Tensor", "aten.div.Scalar",
        "aten.div.Tensor_mode", "aten.div.Scalar_mode", "aten.neg.default", "aten.abs.default",
        "aten.maximum.default", "aten.minimum.default", "aten.clamp.default",
        "aten.clamp.Tensor", "aten.where.self", "aten.eq.Tensor", "aten.eq.Scalar",
        "aten.ne.Tensor", "aten.ne.Scalar", "aten.lt.Tensor", "aten.lt.Scalar",
        "aten.le.Tensor", "aten.le.Scalar", "aten.gt.Tensor", "aten.gt.Scalar",
        "aten.ge.Tensor", "aten.ge.Scalar", "aten.isnan.default", "aten.isinf.default",
        "aten.sign.default", "aten.floor.default", "aten.ceil.default", "aten.round.default",
        "aten.trunc.default", "aten.relu.default", "aten.remainder.Tensor",
        "aten.remainder.Scalar", "aten.fmod.Tensor", "aten.fmod.Scalar",
        "aten.reciprocal.default", "aten.sqrt.default", "aten.bitwise_and.Tensor",
        "aten.bitwise_and.Scalar", "aten.bitwise_or.Tensor", "aten.bitwise_or.Scalar",
        "aten.bitwise_xor.Tensor", "aten.bitwise_xor.Scalar", "aten.bitwise_not.default",
        "aten.logical_and.default", "aten.logical_or.default", "aten.logical_xor.default",
        "aten.logical_not.default", "aten._to_copy.default",
    ],
    "test_float_math_and_reductions": [
        "aten.exp.default", "aten.log.default", "aten.rsqrt.default", "aten.tanh.default",
        "aten.sigmoid.default", "aten.erf.default", "aten.sin.default", "aten.cos.default",
        "aten.tan.default", "aten.asin.default", "aten.acos.default", "aten.atan.default",
        "aten.sinh.default", "aten.cosh.default", "aten.asinh.default", "aten.acosh.default",
        "aten.atanh.default", "aten.expm1.default", "aten.log1p.default", "aten.log2.default",
        "aten.log10.default", "aten.atan2.default", "aten.pow.Tensor_Scalar",
        "aten.pow.Tensor_Tensor", "aten.pow.Scalar", "aten.gelu.default", "aten.elu.default",
        "aten.leaky_relu.default", "aten.hardtanh.default",
        "aten.sum.dim_IntList", "aten.mean.dim", "aten.mean.default", "aten.amax.default",
        "aten.amin.default", "aten.argmax.default", "aten.argmin.default", "aten.max.dim",
        "aten.min.dim", "aten.prod.dim_int", "aten.prod.default", "aten.var.correction",
        "aten.any.default", "aten.any.dim", "aten.any.dims", "aten.cumsum.default",
        "aten._softmax.default", "aten._log_softmax.default",
        "aten.linalg_vector_norm.default",
    ],
}  # fmt: skip
BY_TORCH = {
    "test_float_math_and_reductions": ["aten.atan2.out"],
}
"""Ops torch rewrites before kiln sees them: an out= overload is the functional op in the
program functionalization makes (it writes ``out`` by a copy kiln does not need)."""


def _arith(x, y, lo, hi):
    return (x + y, A.add.Scalar(x, 2.5), x - y, A.sub.Scalar(x, 1.5), x * y,
            A.mul.Scalar(x, -3.0), x / y, A.div.Scalar(x, 4.0),
            torch.div(x, y, rounding_mode="floor"),
            A.div.Scalar_mode(x, 2.0, rounding_mode="trunc"),
            -x, x.abs(), torch.maximum(x, y), torch.minimum(x, y), x.clamp(-1.0, 2.0),
            x.clamp(min=lo, max=hi), torch.where(x > y, x, y), x == y, x == 1.5, x != y,
            x != 1.5, x < y, x < 0.5, x <= y, x <= 0.0, x > y, x > -1.0, x >= y, x >= 1.5,
            torch.isnan(x), torch.isinf(x), torch.sign(x), torch.floor(x * 1.7),
            torch.ceil(x * 1.7), torch.round(x * 1.7), torch.trunc(x * 1.7), torch.relu(x),
            torch.remainder(x, y), x % 2.5, torch.fmod(x, y), torch.fmod(x, -2.5),
            torch.reciprocal(x), torch.sqrt(x))  # fmt: skip


def _float_math(x, y, u, p):
    return (torch.exp(x), torch.log(p), torch.rsqrt(p), torch.tanh(x), torch.sigmoid(x),
            torch.erf(x), torch.sin(x), torch.cos(x), torch.tan(u), torch.asin(u), torch.acos(u),
            torch.atan(x), torch.sinh(u), torch.cosh(u), torch.asinh(x), torch.acosh(p + 1),
            torch.atanh(u), torch.expm1(u * 1e-3), torch.log1p(p * 1e-4), torch.log2(p),
            torch.log10(p), torch.atan2(x, y), A.atan2.out(y, x, out=torch.empty_like(x)),
            x**3, p**u, 2.0**u,
            torch.nn.functional.gelu(x), torch.nn.functional.gelu(x, approximate="tanh"),
            torch.nn.functional.elu(x, 0.7), torch.nn.functional.leaky_relu(x, 0.2),
            torch.nn.functional.hardtanh(x, -0.5, 1.5))  # fmt: skip


def _integers(i, j, x):
    b, c = i > 0, j > 0
    return (i & j, i & 6, i | j, i | 6, i ^ j, i ^ 6, ~i, b & c, b | c, b ^ c, ~b,
            torch.logical_and(i, x), torch.logical_or(x, j), torch.logical_xor(b, x),
            torch.logical_not(x), x.to(torch.int32), i.to(torch.float32),
            torch.div(i, j, rounding_mode="floor"), i % j, i * 3 - j)  # fmt: skip


def _reductions(x, y):
    return (x.sum(1), y.sum((0, 1), keepdim=True), y.mean(0), y.mean(), y.amax(1),
            y.amin(0, keepdim=True), y.argmax(1), y.argmin(), y.max(1), y.min(0, keepdim=True),
            y.prod(1), y.prod(), y.var(1), y.var((0, 1), correction=0), (x > 1).any(),
            (x > 1).any(1), (y > 1).any((0, 1)), y.cumsum(1), (y > 0).cumsum(0),
            y.softmax(1), y.log_softmax(0), torch.linalg.vector_norm(y, dim=1),
            torch.linalg.vector_norm(y, 1, dim=0), torch.linalg.vector_norm(y, float("inf")),
            torch.linalg.vector_norm(y, 3.0, dim=1, keepdim=True))  # fmt: skip


def test_exact_element_wise() -> None:
    lo = torch.linspace(-2, 0, 8)
    hi = torch.linspace(0.5, 1.5, 8)

    def ops(x, y, lo, hi, i, j):
        return (*stacked(_arith(x, y, lo, hi)), *stacked(_integers(i, j, x)))

    check(Fn(ops), (X, Y, lo, hi, I, J), COVERS["test_exact_element_wise"], EXACT)


def test_float_math_and_reductions() -> None:
    p = Y.abs() + 0.25

    def ops(x, y, u, p):
        return (*stacked(_float_math(x, y, u, p)), *_reductions(x, y))

    name = "test_float_math_and_reductions"
    check(Fn(ops), (X, Y, U, p), COVERS[name], MATH, BY_TORCH[name])
