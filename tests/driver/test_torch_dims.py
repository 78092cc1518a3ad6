"""Dynamic dims of a torch module in ``kiln.compile``: ``dims={"batch": 0, "seq": 1}``,
``dynamic=True`` and torch.export's ``dynamic_shapes`` give symbolic dims named after their
``Dim``, checked at each call (torch's ranges included); against eager at several sizes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

import kiln  # noqa: E402
from kiln.errors import FrontendError, KilnError  # noqa: E402
from kiln.script import ir as I  # noqa: E402
from kiln.script import relax as R  # noqa: E402


class Masked(torch.nn.Module):
    """x [batch, seq, 8] and mask [batch, seq]: a linear layer, masked mean over seq."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: Any, mask: Any) -> Any:
        h = torch.relu(self.fc(x)) * mask.unsqueeze(-1)
        return h.sum(1) / mask.sum(1, keepdim=True).clamp(min=1)


def inputs(batch: int, seq: int) -> tuple[Any, Any]:
    gen = torch.Generator().manual_seed(batch * 10 + seq)
    mask = (torch.rand(batch, seq, generator=gen) > 0.3).float()
    return torch.randn(batch, seq, 8, generator=gen), mask


def check(model: Any, net: Any, args: tuple[Any, ...]) -> None:
    with torch.no_grad():
        want = net(*args).numpy()
    np.testing.assert_allclose(model(*args).numpy(), want, rtol=1e-5, atol=1e-6)


def test_dims_axes_make_named_symbolic_dims_of_every_input() -> None:
    torch.manual_seed(0)
    net = Masked().eval()
    model = kiln.compile(net, example_args=inputs(2, 5), dims={"batch": 0, "seq": 1})
    assert [s.dims for s in model.inputs] == [("batch", "seq", 8), ("batch", "seq")]
    for batch, seq in [(2, 5), (3, 1), (1, 9)]:
        check(model, net, inputs(batch, seq))
    x, _ = inputs(2, 5)
    with pytest.raises(
        FrontendError, match="input 'mask' has batch = 3 .* input 'x' has batch = 2"
    ):
        model(x, inputs(3, 5)[1])


def test_dynamic_shapes_dims_keep_their_names_and_torchs_range() -> None:
    torch.manual_seed(1)
    net = Masked().eval()
    batch = torch.export.Dim("n", min=2, max=6)
    shapes = {"x": {0: batch}, "mask": {0: batch}}
    model = kiln.compile(net, example_args=inputs(3, 4), dynamic_shapes=shapes)
    assert [s.dims for s in model.inputs] == [("n", 4, 8), ("n", 4)]
    check(model, net, inputs(6, 4))
    msg = r"input 'x' has n = 7 \(dim 0\); the model was compiled for n in \[2, 6\]"
    with pytest.raises(ValueError, match=msg):  # a FrontendError is a ValueError
        model(*inputs(7, 4))
    with pytest.raises(FrontendError, match=r"n = 1 .* n in \[2, 6\] \(the range torch.export"):
        model(*inputs(1, 4))


def test_dynamic_true_is_dim_0_of_every_input() -> None:
    torch.manual_seed(2)
    net = torch.nn.Sequential(torch.nn.Linear(8, 3), torch.nn.Tanh()).eval()
    model = kiln.compile(net, example_args=(torch.randn(2, 8),), dynamic=True)
    assert model.inputs[0].dims == ("batch", 8)
    for batch in (1, 5):
        check(model, net, (torch.randn(batch, 8),))


def test_a_dim_the_model_fixes_is_torchs_error_with_kilns_context() -> None:
    class Fixed(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            return x.reshape(2, -1)  # batch must be 2

    with pytest.raises(FrontendError) as info:
        kiln.compile(Fixed(), example_args=(torch.randn(2, 3),), dims={"batch": 0})
    text = str(info.value)
    assert "torch.export could not export Fixed" in text
    assert "batch" in text and "specialized" in text  # torch's own reason
    assert "kiln exported Fixed with dynamic_shapes=" in text and "sizes (2, 3)" in text


@I.ir_module
class Tiny:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        return x


def test_axes_and_dynamic_are_for_torch_modules() -> None:
    net = torch.nn.Linear(4, 4)
    x = (torch.randn(2, 4),)
    with pytest.raises(KilnError, match="dynamic=True .* or dims= axes, not both"):
        kiln.compile(net, example_args=x, dynamic=True, dims={"seq": 1})
    with pytest.raises(KilnError, match="give dynamic_shapes= or dims= axes"):
        kiln.compile(net, example_args=x, dims={"batch": 0}, dynamic_shapes={"input": {0: None}})
    with pytest.raises(KilnError, match="dynamic=True marks dim 0 of a torch module's inputs"):
        kiln.compile(Tiny, dynamic=True)
    with pytest.raises(KilnError, match=r"dims=\{'n': 0\}: an int is an axis"):
        kiln.compile(Tiny, dims={"n": 0})


def test_a_range_the_model_needs_comes_from_torchs_suggested_fix() -> None:
    class Positions(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.table = torch.nn.Parameter(torch.randn(16, 8))  # 16 positions

        def forward(self, x: Any) -> Any:
            return x + self.table[: x.shape[1]]

    net = Positions().eval()
    model = kiln.compile(net, example_args=(torch.randn(2, 5, 8),), dims={"seq": 1})
    assert model.inputs[0].dims == (2, "seq", 8)
    check(model, net, (torch.randn(2, 16, 8),))
    with pytest.raises(FrontendError, match=r"seq = 17 \(dim 1\).* seq in \[\d, 16\]"):
        model(torch.randn(2, 17, 8))
