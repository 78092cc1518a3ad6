"""The check the Core ATen tests share: a module whose outputs are many ops' results, exported
once, its decomposed program checked to hold the ops the test claims to cover, compiled once by
kiln and compared output by output with eager PyTorch (NaN where torch has NaN)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import kiln  # noqa: E402
from kiln.relax.frontend.torch import from_exported_program  # noqa: E402
from kiln.relax.frontend.torch.activations import decompositions  # noqa: E402

EXACT = 1e-5
"""Tolerance of ops that compute exactly what torch does (arithmetic, moves, comparisons)."""
MATH = 2e-3
"""Tolerance of float math whose rounding differs between libraries."""


class Fn(torch.nn.Module):
    """``fn(*inputs)`` as a module (its outputs a tuple)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *xs: Any) -> Any:
        return self.fn(*xs)


def stacked(outs: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """Same-shape results stacked, one stack per dtype (in order of first use): the element-wise
    ops fuse into a few kernels, which compile in a fraction of the time of one each (row ``k``
    of a stack is its ``k``-th op of that dtype)."""
    groups: dict[torch.dtype, list[torch.Tensor]] = {}
    for t in outs:
        groups.setdefault(t.dtype, []).append(t)
    return tuple(torch.stack(ts) for ts in groups.values())


def ops_of(program: Any) -> set[str]:
    """The ATen ops a program holds."""
    return {str(n.target) for n in program.graph.nodes if n.op == "call_function"}


def _flat(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [v for item in value for v in _flat(item)]
    return [value]


def check(module: torch.nn.Module, args: Sequence[Any], covers: Sequence[str],
          tol: float = EXACT, decomposed: Sequence[str] = (), dynamic: Any = None,
          more: Sequence[Sequence[Any]] = (),
          edit: Callable[[Any], None] | None = None) -> None:  # fmt: skip
    """``module(*args)`` through kiln matches eager (and ``module(*m)`` for each of ``more``,
    with the ``dynamic`` shapes), and its program uses every op of ``covers`` once decomposed
    (and ``edit``-ed: ops no exported program holds are put in by hand), and every op of
    ``decomposed`` before (ops torch rewrites)."""
    module = module.eval()
    program = torch.export.export(module, tuple(args), dynamic_shapes=dynamic)
    core = program.run_decompositions(decompositions())  # NOTE: once: imported as it is
    if edit is not None:
        edit(core)
    missing = set(covers) - ops_of(core)
    assert not missing, f"the program does not use {sorted(missing)}"
    if decomposed:
        held = ops_of(program) | ops_of(program.run_decompositions({}))
        assert set(decomposed) <= held, f"the program does not use {set(decomposed) - held}"
    model = kiln.compile(from_exported_program(core, decomposed=True), exec_mode="bytecode")
    for inputs in (args, *more):
        _compare(model, module, inputs, tol)


def _compare(model: Any, module: torch.nn.Module, args: Sequence[Any], tol: float) -> None:
    with torch.no_grad():
        want = _flat(module(*args))
    got = _flat(model(*[a.numpy() if isinstance(a, torch.Tensor) else a for a in args]))
    assert len(got) == len(want), f"{len(got)} outputs, torch has {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        label = f"output {k}"
        w = w.detach().numpy() if isinstance(w, torch.Tensor) else np.asarray(w)
        g = np.asarray(g)
        assert g.shape == w.shape, f"{label}: shape {g.shape}, torch {w.shape}"
        assert g.dtype == w.dtype, f"{label}: dtype {g.dtype}, torch {w.dtype}"
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol, equal_nan=True, err_msg=label)
        else:
            np.testing.assert_array_equal(g, w, err_msg=label)
