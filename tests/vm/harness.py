"""Run a graph-level module in both VM modes and check that they agree.

`run_both(mod, "main", *args)` builds ``mod`` with `kiln.relax.build` in bytecode and compiled
mode (each build cached per module object), calls the function in each, asserts that the two
results are identical (same structure, same values bit for bit) and returns one of them as
plain Python / numpy values (tuples stay tuples, tensors become arrays).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kiln import relax
from kiln.ir import IRModule
from kiln.runtime import NDArray, VirtualMachine
from kiln.vm import EXEC_MODES, Executable

_BUILT: dict[tuple[int, str], tuple[IRModule, Executable, VirtualMachine]] = {}


def machine(mod: IRModule, mode: str) -> VirtualMachine:
    """A VM for ``mod`` built in ``mode`` (built once per module object and mode)."""
    key = (id(mod), mode)
    hit = _BUILT.get(key)
    if hit is None or hit[0] is not mod:
        ex = relax.build(mod, target="c", exec_mode=mode)
        hit = _BUILT[key] = (mod, ex, VirtualMachine(ex))
    return hit[2]


def plain(value: Any) -> Any:
    """A VM result as numpy arrays and Python tuples."""
    if isinstance(value, NDArray):
        return value.numpy()
    if type(value).__module__.startswith("torch"):
        return value.numpy()  # tvm-ffi hands torch inputs' results back as torch tensors
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    return value


def assert_same(a: Any, b: Any) -> None:
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    else:
        assert type(a) is type(b) and (callable(a) or a == b), (a, b)


def run_both(mod: IRModule, name: str, *args: Any) -> Any:
    """``name(*args)`` in both modes; the (identical) result as plain values."""
    results = [plain(machine(mod, mode)[name](*args)) for mode in EXEC_MODES]
    assert_same(results[0], results[1])
    return results[1]
