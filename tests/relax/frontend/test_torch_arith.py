"""torch.export arithmetic: each ATen op becomes one relax operator record (``remainder`` one
``relax.floor_mod``, ``div(rounding_mode="trunc")`` one ``relax.trunc_divide``, ``sign`` one
``relax.sign``, ``isfinite`` one ``relax.isfinite`` where torch would decompose it into four
ops...) and, compiled with `kiln.compile`, matches eager PyTorch on negative operands, ``+-inf``,
NaN and large values (``1e10 % 3`` needs an exact remainder)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from tests.relax.frontend import models as M
from tests.relax.op.cases_arith import FX, FY, IX, IY

torch = M.torch
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

import kiln  # noqa: E402
from kiln.ir.visitor import pre_order_nodes  # noqa: E402
from kiln.relax.expr import Call  # noqa: E402
from kiln.relax.frontend.torch import from_exported_program  # noqa: E402

F32, G32 = FX.astype("float32"), FY.astype("float32")
I32, J32 = IX.astype("int32"), IY.astype("int32")
I64 = IX.astype("int64")


class Fn(torch.nn.Module):
    """One function of the inputs."""

    def __init__(self, fn: Callable) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return self.fn(*xs)


CASES = [
    ("sign", torch.sign, [F32], "relax.sign"),  # NaN gives 0
    ("sign_int", torch.sign, [I32], "relax.sign"),
    ("isinf", torch.isinf, [F32], "relax.isinf"),
    ("isposinf", torch.isposinf, [F32], "relax.isinf"),
    ("isneginf", torch.isneginf, [F32], "relax.isinf"),
    ("isfinite", torch.isfinite, [F32], "relax.isfinite"),
    ("remainder", torch.remainder, [F32, G32], "relax.floor_mod"),
    ("remainder_int", torch.remainder, [I32, J32], "relax.floor_mod"),
    ("remainder_scalar", lambda x: x % 2.5, [F32], "relax.floor_mod"),
    ("scalar_remainder", lambda x: 7.5 % x, [G32], "relax.floor_mod"),
    ("fmod", torch.fmod, [F32, G32], "relax.trunc_mod"),
    ("fmod_int", torch.fmod, [I64, IY.astype("int64")], "relax.trunc_mod"),
    ("div_trunc", lambda a, b: torch.div(a, b, rounding_mode="trunc"), [F32, G32],
     "relax.trunc_divide"),
    ("div_trunc_int", lambda a, b: torch.div(a, b, rounding_mode="trunc"), [I32, J32],
     "relax.trunc_divide"),
    ("div_floor_int", lambda a, b: torch.div(a, b, rounding_mode="floor"), [I32, J32],
     "relax.floor_divide"),
    ("logical_xor", lambda a, b: torch.logical_xor(a, b), [F32 > 0, F32 < 1],
     "relax.logical_xor"),
    ("pow_int", lambda x: x**3, [I32], "relax.power"),
    ("pow_int64", lambda x: x**13, [I64], "relax.power"),  # wraps, as torch's does
    ("reciprocal", torch.reciprocal, [F32], "relax.divide"),
]  # fmt: skip


def _ops(program: torch.export.ExportedProgram) -> list[str]:
    mod = from_exported_program(program)
    return [n.op.name for n in pre_order_nodes(mod["main"].body) if isinstance(n, Call)]


@pytest.mark.parametrize(("name", "fn", "inputs", "record"), CASES, ids=[c[0] for c in CASES])
def test_one_record_matches_eager(name: str, fn: Callable, inputs: list, record: str) -> None:
    net = Fn(fn).eval()
    args = tuple(torch.from_numpy(a) for a in inputs)
    program = torch.export.export(net, args)  # once: imported, then compiled
    assert _ops(program) == [record]
    with torch.no_grad():
        want = net(*args).numpy()
    got = kiln.compile(program)(*inputs).numpy()
    assert got.dtype == want.dtype, name
    # NOTE: exact, NaN where torch has NaN; a zero remainder's sign is not compared (torch's
    # keeps fmod's, numpy's and onnxruntime's take the divisor's)
    np.testing.assert_array_equal(got, want, err_msg=name)
