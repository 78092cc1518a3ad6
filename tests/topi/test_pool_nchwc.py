"""Pools over channel-blocked NCHWc tensors (`kiln.topi.x86.pool`): max and average pools
against numpy windows, the register tile, vector max instead of lane-by-lane scalar code; vector
min / max with NaN lanes as ``a > b ? a : b`` (the C emitter's compare-and-blend).
"""

from __future__ import annotations

import numpy as np

import kiln
from kiln import te, tir, topi
from kiln.driver import build
from kiln.topi.x86.pool import pool_tile_width
from tests.topi.conftest import machine_code

# (n, blocks, h, w, block, pool, stride, pad)
CASES = [
    (1, 2, 13, 13, 16, 3, 2, 1),  # ResNet's stem pool, small
    (2, 1, 8, 9, 16, 2, 2, 0),  # no padding, odd width
    (1, 1, 7, 10, 32, 3, 1, 1),  # two vectors per block (AVX-512), stride 1
]


def _windows(x: np.ndarray, k: int, s: int, p: int) -> np.ndarray:
    padded = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p), (0, 0)), constant_values=np.nan)
    oh = (x.shape[2] + 2 * p - k) // s + 1
    ow = (x.shape[3] + 2 * p - k) // s + 1
    taps = [(i, j) for i in range(k) for j in range(k)]
    return np.stack([padded[:, :, i : i + s * oh : s, j : j + s * ow : s] for i, j in taps])


def test_blocked_pools_match_numpy() -> None:
    """Max and average (padding excluded) pools of every case, built in one function."""
    rng = np.random.default_rng(5)
    xs, outs, arrays, wants = [], [], [], []
    for i, (n, b, h, w, blk, k, s, p) in enumerate(CASES):
        x = te.placeholder((n, b, h, w, blk), name=f"x{i}")
        xs.append(x)
        outs.append(topi.nn.max_pool2d(x, k, s, p, name=f"max{i}"))
        outs.append(topi.nn.avg_pool2d(x, k, s, p, count_include_pad=False, name=f"avg{i}"))
        xa = rng.standard_normal((n, b, h, w, blk)).astype("float32")
        arrays.append(xa)
        wins = _windows(xa, k, s, p)
        wants += [np.nanmax(wins, axis=0), np.nanmean(wins, axis=0)]
    f = build(te.lower(topi.schedule_for(outs, "c"), [*xs, *outs]), target="c")["main"]
    got = [np.zeros(w.shape, "float32") for w in wants]
    f(*arrays, *got)
    for g, w in zip(got, wants):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_tile_width_divides_the_row() -> None:
    assert [pool_tile_width(ow) for ow in (56, 7, 9, 10, 1)] == [4, 1, 3, 2, 1]


def test_max_pool_runs_vector_code() -> None:
    """The window maximum is vector code: no scalar ``maxss`` in the kernel (the lane-by-lane
    helper loop compiled to 16 of them per vector)."""
    x = te.placeholder((1, 2, 12, 12, 16), name="x")
    y = topi.nn.max_pool2d(x, 3, 2, 1)
    mod = build(te.lower(topi.schedule_for(y, "c"), [x, y]), target="c")
    assert not [line for line in machine_code(mod).splitlines() if "maxss" in line]


def test_vector_min_max_propagate_nan() -> None:
    """``max(a, b)`` / ``min(a, b)`` on vectors are numpy's ``maximum`` / ``minimum`` lane for
    lane: NaN where either operand is NaN (the scalar helper agrees: the tail lanes)."""
    a = te.placeholder((67,), name="a")
    b = te.placeholder((67,), name="b")
    hi = te.compute((67,), lambda i: tir.Max(a[i], b[i]), name="hi")
    lo = te.compute((67,), lambda i: tir.Min(a[i], b[i]), name="lo")
    f = kiln.build_op([hi, lo], [a, b, hi, lo])
    rng = np.random.default_rng(0)
    av, bv = rng.standard_normal((2, 67)).astype("float32")
    av[::5], bv[::7] = np.nan, np.nan
    got_hi, got_lo = np.zeros(67, "float32"), np.zeros(67, "float32")
    f(av, bv, got_hi, got_lo)
    np.testing.assert_array_equal(got_hi, np.maximum(av, bv))
    np.testing.assert_array_equal(got_lo, np.minimum(av, bv))


def test_symbolic_batch_grain_agrees_with_the_fixed_batch_decision() -> None:
    """A pool over a symbolic batch is parallel from the batch where its fixed-size twin is
    (the demo CNN's max pool ran on one thread at batch 8, its static twin on two): the grain
    counts an iteration's points, its row tile's pixels included."""
    from kiln.tir.attrs import PARALLEL_GRAIN
    from kiln.tir.functor import substitute
    from tests.topi.conftest import loops_of

    def parallel(n: object) -> list[tir.For]:
        x = te.placeholder((n, 1, 32, 32, 16), name="x")
        y = topi.nn.max_pool2d(x, 2, 2, 0)
        func = te.lower(topi.schedule_for(y, "c"), [x, y])
        return [lp for lp in loops_of(func) if lp.kind == tir.ForKind.PARALLEL]

    n = te.var("n", "int64")
    (par,) = parallel(n)
    grain = par.annotations[PARALLEL_GRAIN]
    one = substitute(par.extent, {n: tir.IntImm("int64", 1)})
    per_image = kiln.arith.Analyzer().simplify(one).value
    for batch in (1, 2, 4, 8, 16):
        assert bool(parallel(batch)) == (batch * per_image >= grain), (batch, per_image, grain)
