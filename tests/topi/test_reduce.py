"""Reductions against numpy over axes, negative axes, keepdims and shapes that exercise each
schedule (rfactor lanes with a ragged tail, parallel parts, vectorized outer reductions), the
fused relu(x*a+b)+sum of the benchmark, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from kiln import te, tir, topi
from kiln.errors import IRError, IRValueError
from kiln.ir import Target
from kiln.topi.generic.common import ACCUMULATOR_VECTORS
from tests.topi.conftest import build, loops_of, run

CASES = [
    ((37, 19), None, False),
    ((37, 19), 1, True),
    ((37, 19), -2, False),
    ((4, 5, 33), (0, 2), False),
    ((4, 5, 33), -1, True),
    ((3, 200), 1, False),
    ((200, 3), 0, True),
    ((6, 7, 40), (-1, -2), True),
    ((70001,), 0, False),
]


@pytest.mark.parametrize("shape, axis, keepdims", CASES)
def test_sum_mean_max_min(shape, axis, keepdims, rng) -> None:
    x = te.placeholder(shape, name="x")
    outs = [
        topi.sum(x, axis, keepdims),
        topi.mean(x, axis, keepdims),
        topi.max(x, axis, keepdims),
        topi.min(x, axis, keepdims),
    ]
    a = rng.standard_normal(shape).astype("float32")
    got = run(outs, [x], a)
    ref = a.astype("float64")
    want = [
        ref.sum(axis=axis, keepdims=keepdims),
        ref.mean(axis=axis, keepdims=keepdims),
        a.max(axis=axis, keepdims=keepdims),
        a.min(axis=axis, keepdims=keepdims),
    ]
    # float32 accumulation: the error scales with the sum of magnitudes, not with the result
    scale = np.abs(ref).sum(axis=axis, keepdims=keepdims)
    count = a.size / max(np.size(scale), 1)
    for name, g, w, bound in zip(
        ["sum", "mean", "max", "min"], got, want, [scale, scale / count, 0 * scale, 0 * scale]
    ):
        assert g.shape == np.shape(w), name
        assert np.all(np.abs(g - w) <= 1e-5 * np.abs(w) + 1e-6 * bound + 1e-7), name


def test_integer_and_float64_reductions(rng) -> None:
    i = te.placeholder((9, 50), "int32", name="i")
    d = te.placeholder((9, 50), "float64", name="d")
    outs = [topi.sum(i, 1), topi.max(i, 0), topi.min(i), topi.sum(d, -1), topi.mean(d, 0)]
    n = rng.integers(-100, 100, (9, 50)).astype("int32")
    f = rng.standard_normal((9, 50))
    got = run(outs, [i, d], n, f)
    np.testing.assert_array_equal(got[0], n.sum(1))
    np.testing.assert_array_equal(got[1], n.max(0))
    np.testing.assert_array_equal(got[2], n.min())
    np.testing.assert_allclose(got[3], f.sum(-1), rtol=1e-12)
    np.testing.assert_allclose(got[4], f.mean(0), rtol=1e-12)


def test_empty_axis_list_copies(rng) -> None:
    x = te.placeholder((3, 4), name="x")
    a = rng.standard_normal((3, 4)).astype("float32")
    (got,) = run(topi.sum(x, axis=[]), [x], a)
    np.testing.assert_array_equal(got, a)


def test_fused_scale_shift_relu_sum(rng) -> None:
    """The benchmark's fused kernel: relu(x * a + b) summed, with a size that leaves a tail."""
    n = 100003
    x = te.placeholder((n,), name="x")
    a = te.placeholder((n,), name="a")
    b = te.placeholder((n,), name="b")
    s = topi.sum(topi.relu(topi.add(topi.multiply(x, a), b)))
    xv, av, bv = (rng.standard_normal(n).astype("float32") for _ in range(3))
    (got,) = run(s, [x, a, b], xv, av, bv)
    want = np.maximum(xv.astype("float64") * av + bv, 0).sum()
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_reduction_shared_by_two_outputs(rng) -> None:
    x = te.placeholder((40, 300), name="x")
    s = topi.sum(x, axis=1)
    outs = [s, topi.multiply(s, 2.0), topi.mean(x, axis=0)]
    a = rng.standard_normal((40, 300)).astype("float32")
    got = run(outs, [x], a)
    np.testing.assert_allclose(got[0], a.sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], 2 * a.sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[2], a.mean(0), rtol=1e-5, atol=1e-6)


def test_symbolic_reduction_extent(rng) -> None:
    n = te.size_var("n")
    x = te.placeholder((5, n), name="x")
    s = topi.sum(x, axis=1)
    a = rng.standard_normal((5, 77)).astype("float32")
    out = np.zeros(5, "float32")
    build(s, [x])(a, out)
    np.testing.assert_allclose(out, a.sum(1), rtol=1e-5)


@pytest.mark.parametrize(
    ("target", "lanes"), [("c -mcpu=haswell", 8), ("c -mcpu=x86-64-v4", 16), ("c", None)]
)
def test_schedules_vectorize_and_parallelize(target: str, lanes: int | None) -> None:
    """A reduction over the outer axis accumulates a vector of outputs per step: as many
    registers of the target's width (the host's for plain ``c``) as a reduction keeps."""
    lanes = ACCUMULATOR_VECTORS * (lanes or Target("c").vector_bytes // 4)
    x = te.placeholder((4096, 1024), name="x")  # ~200 us on one core: worth threads
    rows = topi.sum(x, 1)
    inner = te.lower(topi.schedule_for(rows, target), [x, rows])
    kinds = {lp.kind for lp in loops_of(inner)}
    assert {tir.ForKind.VECTORIZED, tir.ForKind.PARALLEL} <= kinds
    y = topi.sum(x, 0)
    outer = te.lower(topi.schedule_for(y, target), [x, y])
    vec = [lp for lp in loops_of(outer) if lp.kind == tir.ForKind.VECTORIZED]
    assert vec and all(lp.extent.value == lanes for lp in vec)


# -- bad input ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "call, pattern",
    [
        (lambda x: topi.sum(x, 2), r"sum: axis 2 is out of range for tensor 'x' of rank 2"),
        (lambda x: topi.max(x, -3), r"max: axis -3 is out of range for tensor 'x'"),
        (lambda x: topi.min(x, [0, -2]), r"min: axis \[0, -2\] lists an axis twice"),
        (lambda x: topi.sum(x, 1.0), r"sum: axis must be an int, got 1.0"),
        (lambda x: topi.mean(topi.cast(x, "int32")), r"mean: tensor 'T_cast' has dtype int32"),
        (lambda x: topi.sum(topi.cast(x, "bool")), r"sum: tensor 'T_cast' has dtype bool"),
    ],
)
def test_bad_axes_and_dtypes(call, pattern: str) -> None:
    x = te.placeholder((3, 4), name="x")
    with pytest.raises((IRError, IRValueError), match=pattern):
        call(x)
