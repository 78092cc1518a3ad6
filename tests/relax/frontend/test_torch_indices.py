"""torch.export embeddings and index_select go through the checked ``take``: an index outside
the table is a kiln error naming the index and the range, not a read past the table (issue 22,
finding 8)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import kiln  # noqa: E402
from kiln.errors import KernelIndexError  # noqa: E402


class _Lookup(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.table = torch.nn.Embedding(10, 8)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.table(ids) * 2 + torch.index_select(self.table.weight, 0, ids[0])


def test_embedding_and_index_select_check_their_indices() -> None:
    torch.manual_seed(0)
    net = _Lookup().eval()
    ids = torch.tensor([[1, 9, 0]])
    model = kiln.compile(net, example_args=(ids,), exec_mode="bytecode")
    with torch.no_grad():
        want = net(ids).numpy()
    np.testing.assert_allclose(model(ids.numpy()).numpy(), want, rtol=1e-6)
    for bad in (10, 2**40):
        with pytest.raises(KernelIndexError, match=rf"index {bad} is out of range \[-10, 10\)"):
            model(np.array([[1, bad, 0]], dtype=np.int64))
