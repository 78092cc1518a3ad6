"""torch.export pools whose last window runs past the input (``ceil_mode=True``, as GoogLeNet's):
kiln's outputs match eager PyTorch, unblocked and channel-blocked (after a convolution)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.relax.frontend import models as M

torch = M.torch
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

import kiln  # noqa: E402


class CeilPools(torch.nn.Module):
    """Max and average pools in ceil mode, straight on the input and after a convolution."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.max = torch.nn.MaxPool2d(3, 2, ceil_mode=True)
        self.avg = torch.nn.AvgPool2d(3, 2, padding=1, ceil_mode=True)
        self.avg_no_pad = torch.nn.AvgPool2d(2, 3, ceil_mode=True, count_include_pad=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        h = self.conv(x)
        return self.max(x), self.max(h), self.avg(h), self.avg_no_pad(h), self.max(self.max(h))


@pytest.mark.parametrize("size", [14, 15])
def test_ceil_mode_pools_match_eager(size: int) -> None:
    torch.manual_seed(0)
    net = CeilPools().eval()
    x = torch.randn(1, 3, size, size)
    model = kiln.compile(net, example_args=(x,))
    with torch.no_grad():
        want = [t.numpy() for t in net(x)]
    got = model(x.numpy())
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        g = g.numpy()
        assert g.shape == w.shape, f"output {k}"
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"output {k}")
