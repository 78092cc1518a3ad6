"""Fixtures for operator-library tests: a fresh build cache per session, a seeded generator,
and ``build``, which schedules outputs with `topi.schedule_for`, lowers and compiles them.

Compilation dominates the run time, so tests put several operators into one build (one
function with several outputs) wherever the cases share inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from kiln import te, tir, topi


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def build(outputs: Any, inputs: list[Any]) -> Callable[..., None]:
    """Compile ``outputs`` (a tensor or list) of ``inputs`` with the default schedules; call the
    result with the input arrays and output arrays, in that order."""
    outs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    func = te.lower(topi.schedule_for(outs), [*inputs, *outs])
    assert tir.verify_well_formed(func) == []
    from kiln.driver import build as kbuild

    return kbuild(func, target="c")["main"]


def run(outputs: Any, inputs: list[Any], *arrays: np.ndarray) -> list[np.ndarray]:
    """Build, run on ``arrays`` (one per input) and return the output arrays."""
    outs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    results = [np.zeros(shape_of(t), dtype=str(t.dtype)) for t in outs]
    build(outs, inputs)(*arrays, *results)
    return results


def shape_of(t: te.Tensor) -> tuple[int, ...]:
    """A tensor's constant shape as ints."""
    return tuple(int(d.value) for d in t.shape)  # type: ignore[attr-defined]


def loops_of(func: tir.PrimFunc) -> list[tir.For]:
    """Every loop of a lowered function."""
    return [n for n in tir.pre_order_nodes(func.body) if isinstance(n, tir.For)]


def allocations_of(func: tir.PrimFunc) -> list[tir.Allocate]:
    """Every scratch allocation of a lowered function."""
    return [n for n in tir.pre_order_nodes(func.body) if isinstance(n, tir.Allocate)]
