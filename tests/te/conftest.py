"""Fixtures for TE tests: run a lowered PrimFunc on numpy arrays with each available backend.

``run(func, *arrays)`` executes ``func`` in place. The ``interp`` backend is the reference TIR
interpreter in this folder (always available); the ``c`` backend goes through ``kiln.build``
with the C target.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from kiln import te, tir
from tests.te.tir_interp import run_tir
from tests.te.tir_text import show

Runner = Callable[..., None]


def _c_runner() -> Runner:
    from kiln.driver import build

    def run(func: tir.PrimFunc, *arrays: Any) -> None:
        mod = build(func, target="c")
        mod[func.global_symbol or "main"](*arrays)

    return run


@pytest.fixture(params=["interp", "c"])
def run(request: pytest.FixtureRequest) -> Runner:
    """Run a PrimFunc on numpy arrays (outputs written in place), verifying it first."""
    backend = _c_runner() if request.param == "c" else run_tir

    def go(func: tir.PrimFunc, *arrays: Any) -> None:
        assert tir.verify_well_formed(func) == [], show(func)
        assert_pure_tir(func)
        backend(func, *arrays)

    return go


def assert_pure_tir(func: tir.PrimFunc) -> None:
    """No TE node (axis, tensor read, reduction) is left in a lowered function."""
    leaked = [
        n
        for n in tir.pre_order_nodes(func.body)
        if isinstance(n, (te.AxisVar, te.ProducerLoad, te.Reduce))
    ]
    assert not leaked, f"TE nodes left in lowered TIR: {leaked}"


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)
