"""Random numbers through torch.export: ``rand`` / ``randn`` / ``randperm`` (Core ATen) and the
forms programs keep (``rand_like``, ``randn_like``, ``randint``, ``bernoulli``, ``uniform_``,
``torch.normal``), in one compiled module with a dynamic batch.

kiln's numbers are its own (torch's for the same seed are others), so they are checked by
their law rather than against eager values: shapes and dtypes as eager's, ranges, means and
variances over 100k draws, uncorrelated neighbours, permutations, and fresh numbers on every
call and for every op of a call. The generator itself is checked bit for bit against numpy in
tests/relax/op/cases_random.py."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.relax.frontend.torch_core import Fn, ops_of

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

import kiln  # noqa: E402
from kiln.relax.frontend.torch import from_exported_program  # noqa: E402
from kiln.relax.frontend.torch.activations import decompositions  # noqa: E402

N = 100_000
"""Draws per statistic: a mean of N uniforms is 0.5 within 0.0009 (one standard deviation)."""
X = torch.full((100, 1000), 2.0)

COVERS = {
    "test_random_numbers_by_their_law": [
        "aten.rand.default", "aten.randn.default", "aten.randperm.default",
        "aten.rand_like.default", "aten.randn_like.default", "aten.randint.low",
        "aten.randint.default", "aten.bernoulli.p", "aten.uniform.default",
        "aten.normal.Tensor_float",
    ],
}  # fmt: skip


def _draws(x):
    b = x.shape[0]
    return (torch.rand(N), torch.randn(N, dtype=torch.float64), torch.randperm(b),
            torch.randperm(1000), torch.rand_like(x), torch.randn_like(x),
            torch.randint(3, 9, (N,)), torch.randint(5, (b, 3), dtype=torch.int32),
            torch.bernoulli(x, 0.3), x.clone().uniform_(-2, 3), torch.normal(x, 0.5),
            torch.rand(b, 3) + x[:, :3])  # fmt: skip


@pytest.fixture(scope="module")
def model() -> Any:
    batch = torch.export.Dim("batch", min=2, max=128)
    program = torch.export.export(Fn(_draws), (X,), dynamic_shapes={"xs": ({0: batch},)})
    core = program.run_decompositions(decompositions())
    missing = set(COVERS["test_random_numbers_by_their_law"]) - ops_of(core)
    assert not missing, f"the program does not use {sorted(missing)}"
    return kiln.compile(from_exported_program(core, decomposed=True), exec_mode="bytecode")


def _uniform(u: np.ndarray, lo: float, hi: float) -> None:
    """``u`` uniform in ``[lo, hi)``: bounds, mean, variance, lag-1 correlation (5 sigma)."""
    width = hi - lo
    assert u.min() >= lo and u.max() < hi
    assert abs(u.mean() - (lo + hi) / 2) < 5 * width * 0.2887 / np.sqrt(u.size)
    assert abs(u.var() / width**2 - 1 / 12) < 0.0015
    assert abs(np.corrcoef(u.ravel()[:-1], u.ravel()[1:])[0, 1]) < 0.02


def _normal(z: np.ndarray, mean: float, std: float) -> None:
    assert abs(z.mean() - mean) < 5 * std / np.sqrt(z.size)
    assert abs(z.std() / std - 1) < 0.015
    assert 0.6 < np.mean(np.abs(z - mean) < std) < 0.765  # 68.3% within one std
    assert abs(np.corrcoef(z.ravel()[:-1], z.ravel()[1:])[0, 1]) < 0.02


def _laws(outs: list[np.ndarray], x: np.ndarray) -> None:
    rand, randn, perm, perm1000, like, nlike, ints, small, coin, wide, shifted, plus = outs
    _uniform(rand, 0, 1)
    _uniform(like, 0, 1)
    _normal(randn, 0, 1)
    _normal(nlike, 0, 1)
    _normal(shifted, 2, 0.5)
    _uniform(wide, -2, 3)
    fused = plus - x[:, :3]  # NOTE: u + 2 rounds to float32's spacing there: 1.0 can appear
    assert fused.min() >= 0 and fused.max() <= 1 and len(np.unique(fused)) > 250
    np.testing.assert_array_equal(np.sort(perm), np.arange(len(x)))
    np.testing.assert_array_equal(np.sort(perm1000), np.arange(1000))
    counts = np.bincount(ints - 3, minlength=6)
    assert ints.min() == 3 and ints.max() == 8 and len(counts) == 6
    assert np.all(np.abs(counts / ints.size - 1 / 6) < 0.006), counts
    assert small.min() >= 0 and small.max() <= 4
    assert set(np.unique(coin)) <= {0.0, 1.0} and abs(coin.mean() - 0.3) < 0.006


def test_random_numbers_by_their_law(model: Any) -> None:
    """Each op's draws follow its law, with eager's shapes and dtypes, at the example's batch
    and at another; a second call draws new numbers, and so does every op of one call."""
    first = None
    for x in (X, X, X[:7]):
        with torch.no_grad():
            want = [w.numpy() for w in _draws(x)]
        got = [np.asarray(g) for g in model(x.numpy())]
        assert [(g.shape, g.dtype) for g in got] == [(w.shape, w.dtype) for w in want]
        if len(x) == len(X):
            _laws(got, x.numpy())
        if first is None:
            first = got
        elif len(x) == len(X):
            for k, (a, b) in enumerate(zip(first, got)):
                assert not np.array_equal(a, b), f"output {k}: the same numbers on two calls"
    rand, _, _, _, like, *_ = first
    assert not np.array_equal(rand[: like.size], like.ravel()), "two ops drew the same numbers"
