"""The numpy checks of ``relax.random.uniform`` / ``normal`` / ``permutation``: the generator
(SplitMix64 from a mixed seed, `kiln.topi.random`) recomputed with numpy's wrapping uint64
arithmetic, so kiln's numbers must match bit for bit (the normals to rounding). A dummy input
gives each case its shape (axis 0 symbolic in the symbolic run); the call reads only its dims.
The statistics of the numbers (range, mean, variance, independence of calls) are checked
through the torch frontend (tests/relax/frontend/test_torch_core_random.py)."""

from __future__ import annotations

import numpy as np

from kiln import relax
from kiln.relax import op as R
from kiln.topi.random import GOLDEN, MIX
from tests.relax.op.harness import Case

SEED = 20240611
U64 = np.uint64


def _mix(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> U64(30))) * U64(MIX[0])
    z = (z ^ (z >> U64(27))) * U64(MIX[1])
    return z ^ (z >> U64(31))


def np_bits(seed: int, n: int) -> np.ndarray:
    """The generator's first ``n`` draws for ``seed`` (uint64)."""
    with np.errstate(over="ignore"):
        key = _mix(np.array([seed], "int64").astype(U64) + U64(GOLDEN))
        return _mix(key + (np.arange(n, dtype=U64) + U64(1)) * U64(GOLDEN))


def np_uniform(shape: tuple[int, ...], seed: int, dtype: str) -> np.ndarray:
    keep = {"float32": 24, "float64": 53}[dtype]
    h = np_bits(seed, int(np.prod(shape))) >> U64(64 - keep)
    return (h.astype(dtype) * np.asarray(2.0**-keep, dtype)).reshape(shape)


def np_normal(shape: tuple[int, ...], seed: int) -> np.ndarray:
    h = np_bits(seed, int(np.prod(shape)))
    u1 = ((h >> U64(40)).astype("float64") + 1) * 2.0**-24
    u2 = (h & U64(2**24 - 1)).astype("float64") * 2.0**-24
    return (np.sqrt(-2 * np.log(u1)) * np.cos(2 * np.pi * u2)).astype("float32").reshape(shape)


def np_permutation(n: int, seed: int) -> np.ndarray:
    """Element ``i``: the rank of draw ``i`` (ties in index order)."""
    return np.argsort(np.argsort(np_bits(seed, n), kind="stable"), kind="stable")


def _dims(x: relax.Var) -> relax.ShapeExpr:
    return relax.ShapeExpr(list(x.struct_info.dims))


SHAPE = np.zeros((37, 5), "float32")
ROW = np.zeros((40,), "float32")

RANDOM = [
    Case(
        "relax.random.uniform",
        lambda x: R.random.uniform(_dims(x), SEED),
        [SHAPE],
        lambda x: np_uniform(x.shape, SEED, "float32"),
        rtol=0,
        atol=0,
    ),
    Case(
        "relax.random.uniform",
        lambda x: R.random.uniform(_dims(x), -7, "float64"),
        [ROW],
        lambda x: np_uniform(x.shape, -7, "float64"),
        rtol=0,
        atol=0,
        name="float64, negative seed",
    ),
    Case(
        "relax.random.normal",
        lambda x: R.random.normal(_dims(x), SEED),
        [SHAPE],
        lambda x: np_normal(x.shape, SEED),
        rtol=2e-5,
        atol=2e-5,
    ),
    Case(
        "relax.random.permutation",
        lambda x: R.random.permutation(x.struct_info.dims[0], SEED),
        [ROW],
        lambda x: np_permutation(len(x), SEED),
    ),
]
