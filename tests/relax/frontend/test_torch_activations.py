"""torch.export activations: each stays one ATen op through decomposition and becomes one relax
operator record (``F.mish`` is one ``relax.nn.mish``; torch's own decomposition would give
``exp``/``log1p``/``where``/``tanh``/``mul``); compiled with `kiln.compile`, they match eager
PyTorch on random and special values (large ``|x|``, values near 0, ``+-inf``, NaN)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from tests.relax.frontend import models as M
from tests.relax.op.cases_activation import SPECIAL

torch = M.torch
F = torch.nn.functional
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

import kiln  # noqa: E402
from kiln.ir.visitor import pre_order_nodes  # noqa: E402
from kiln.relax.expr import Call  # noqa: E402
from kiln.relax.frontend.torch import from_exported_program  # noqa: E402

RNG = np.random.default_rng(9)
X = np.concatenate([np.float32(SPECIAL), RNG.uniform(-8, 8, 64 - len(SPECIAL))]).astype("float32")
X = X.reshape(2, 4, 8)


class Act(torch.nn.Module):
    """One activation function, or one activation module (PReLU's weight is a parameter)."""

    def __init__(self, fn: Callable | torch.nn.Module) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)


def _prelu() -> torch.nn.Module:
    p = torch.nn.PReLU(4)
    with torch.no_grad():
        p.weight.copy_(torch.tensor([0.1, 0.5, -0.3, 2.0]))
    return p


CASES = [
    ("softplus", F.softplus, "relax.nn.softplus"),
    ("softplus_beta", lambda x: F.softplus(x, beta=2.0, threshold=5.0), "relax.nn.softplus"),
    ("mish", F.mish, "relax.nn.mish"),
    ("hardswish", F.hardswish, "relax.nn.hardswish"),
    ("hardsigmoid", F.hardsigmoid, "relax.nn.hardsigmoid"),
    ("silu", F.silu, "relax.nn.silu"),
    ("elu", lambda x: F.elu(x, 0.7), "relax.nn.elu"),
    ("selu", F.selu, "relax.nn.selu"),
    ("celu", lambda x: F.celu(x, 0.7), "relax.nn.celu"),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), "relax.nn.leakyrelu"),
    ("hardtanh", lambda x: F.hardtanh(x, -2.0, 3.0), "relax.clip"),
    ("relu6", F.relu6, "relax.clip"),
    ("clamp", lambda x: torch.clamp(x, -1.5, 0.5), "relax.clip"),
    ("gelu", F.gelu, "relax.nn.gelu"),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), "relax.nn.gelu_tanh"),
    ("prelu", _prelu(), "relax.nn.prelu"),
]


def _ops(program: torch.export.ExportedProgram) -> list[str]:
    mod = from_exported_program(program)
    return [n.op.name for n in pre_order_nodes(mod["main"].body) if isinstance(n, Call)]


@pytest.mark.parametrize(("name", "fn", "record"), CASES, ids=[c[0] for c in CASES])
def test_one_record_matches_eager(name: str, fn: Callable, record: str) -> None:
    net = Act(fn).eval()
    program = torch.export.export(net, (torch.from_numpy(X),))  # once: imported, then compiled
    ops = _ops(program)
    # PReLU's [C] weight is reshaped to [C, 1] to broadcast along the channels
    assert ops == (["relax.reshape", record] if name == "prelu" else [record])
    with torch.no_grad():
        want = net(torch.from_numpy(X)).numpy()
    got = kiln.compile(program)(X).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{name}: NaN positions")
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, err_msg=name)


def test_selu_and_elu_keep_their_constants() -> None:
    mod = from_exported_program(torch.export.export(Act(F.selu), (torch.from_numpy(X),)))
    (call,) = [n for n in pre_order_nodes(mod["main"].body) if isinstance(n, Call)]
    assert call.attrs["alpha"] == pytest.approx(1.6732632423543772)
    assert call.attrs["gamma"] == pytest.approx(1.0507009873554805)
