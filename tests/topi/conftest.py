"""Fixtures for operator-library tests: a fresh build cache per session, a seeded generator,
and ``build``, which schedules outputs with `topi.schedule_for`, lowers and compiles them.

Compilation dominates the run time, so tests put several operators into one build (one
function with several outputs) wherever the cases share inputs.
"""

from __future__ import annotations

import re
import shutil
import subprocess
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


# -- machine code ----------------------------------------------------------------------------
def machine_code(mod: Any) -> str:
    """``objdump -d`` of a built module's library (the test is skipped without objdump)."""
    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.skip("objdump is not installed; the checks before this one still ran")
    return subprocess.run([objdump, "-d", str(mod.path)], capture_output=True, text=True).stdout


def hot_loop(asm: str) -> list[str]:
    """The innermost loop (from a backward jump's target to the jump) with the most FMAs."""
    lines = []
    for line in asm.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\t", line)
        if m:
            lines.append((int(m.group(1), 16), line))
    spans = []
    for addr, line in lines:
        jump = re.search(r"\tj[a-z]+\s+([0-9a-f]+) <", line)
        if jump and int(jump.group(1), 16) < addr:
            spans.append((int(jump.group(1), 16), addr))
    # NOTE: innermost: a loop holding another loop is left out (a kernel may hold several
    # copies of its tile, e.g. for the tiles at the padded border and those inside)
    inner = [
        (s, e)
        for s, e in spans
        if not any(s <= a and b <= e and (a, b) != (s, e) for a, b in spans)
    ]
    loops = [[x for a, x in lines if s <= a <= e] for s, e in inner]
    return max(loops, key=lambda body: sum("vfmadd" in x for x in body))


VECTOR_REG = re.compile(r"%([xyz]mm)\d+")


def vector_spills(hot: list[str]) -> list[str]:
    """Instructions of a loop that spill or reload vector registers: a vector register stored to
    memory (an accumulator kept in memory is stored every iteration), or a vector operand read
    from the stack. Integer loads from the stack (loop bounds, row offsets) are not counted."""
    stores = [x for x in hot if re.search(r"\tvmov\w*\s+%[xyz]mm\d+,\S*\(", x)]
    reloads = [x for x in hot if VECTOR_REG.search(x) and "(%rsp" in x]
    return stores + reloads


def fma_accumulators(hot: list[str]) -> set[str]:
    """The registers the loop's FMAs accumulate into (AT&T syntax: the last operand)."""
    return {x.rsplit(",", 1)[1].strip() for x in hot if re.search(r"\tvfmadd\w*\s", x)}
