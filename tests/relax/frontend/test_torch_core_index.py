"""Core ATen shape, creation and indexing ops through torch.export against eager PyTorch, one
compiled module per test: advanced indexing in every placement torch distinguishes (one index,
adjacent indices after a slice, separated indices, broadcast index tensors, negative indices),
its assignment (accumulating, boolean masks), the scatters and their reductions (duplicate
indices: the last update wins, as torch's CPU loop writes them), strided views, sorting."""

from __future__ import annotations

import operator

import numpy as np
import pytest

from tests.relax.frontend.torch_core import EXACT, Fn, check

torch = pytest.importorskip("torch")
A = torch.ops.aten
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

RNG = np.random.default_rng(5)
X = torch.from_numpy(RNG.uniform(-3, 3, (4, 5, 6)).astype("float32"))
M = torch.from_numpy(RNG.uniform(-3, 3, (4, 6)).astype("float32"))
IDX = torch.tensor([2, -1, 0])
ROWS = torch.tensor([[0, 3], [-2, 1]])

COVERS = {
    "test_shapes_indexing_and_scatters": [
        "aten.view.default", "aten.permute.default", "aten.expand.default",
        "aten.unsqueeze.default", "aten.squeeze.dims", "aten.cat.default",
        "aten.split_with_sizes.default", "aten.slice.Tensor", "aten.select.int",
        "aten.constant_pad_nd.default", "aten.full.default", "aten.full_like.default",
        "aten.scalar_tensor.default", "aten.arange.start_step", "aten.empty.memory_format",
        "aten.empty_strided.default", "aten.clone.default", "aten.alias.default",
        "aten.repeat.default", "aten.flip.default", "aten.diagonal.default",
        "aten.as_strided.default", "aten.copy.default", "aten.mm.default", "aten.bmm.default",
        "aten.addmm.default", "aten.index.Tensor", "aten.index_select.default",
        "aten.embedding.default",
        "aten.gather.default", "aten.sort.default", "aten.sort.stable", "aten.topk.default",
        "aten.index_put.default", "aten.scatter.src", "aten.scatter.value",
        "aten.scatter.reduce", "aten.scatter.value_reduce", "aten.scatter_add.default",
        "aten.scatter_reduce.two", "aten.slice_scatter.default", "aten.masked_scatter.default",
        "aten.resize.default",
    ],
    "test_sizes_from_dims_and_data": [
        "aten.sym_size.int", "aten.nonzero.default", "aten._local_scalar_dense.default",
        "aten.sym_stride.int", "aten.sym_storage_offset.default",
    ],
}  # fmt: skip
BY_TORCH = {
    "test_sizes_from_dims_and_data": [
        "aten.sym_numel.default", "aten.sym_is_contiguous.default",
    ],
    "test_shapes_indexing_and_scatters": [
        "aten.squeeze.dim", "aten.fill.Scalar", "aten.select_scatter.default", "aten.var.dim",
        "aten.avg_pool1d.default", "aten.adaptive_avg_pool1d.default", "aten.col2im.default",
        "aten.resize_.default",
    ],
}  # fmt: skip
"""Ops torch rewrites into others before kiln sees them: in the program before its
decomposition."""


def _shapes(x, m):
    a, b, c = torch.split(x, [1, 3, 2], dim=2)
    t = x.permute(0, 2, 1)
    return (x.view(4, 30), t, m[:1].expand(3, 6), x.unsqueeze(1), x[:, :1].squeeze(1),
            torch.cat([a, c], 2), b, x[1:4:2, ::2, -3:], x[:, 2], x[-1],
            torch.nn.functional.pad(x, (1, 2, 0, 3), value=-1.5), torch.full((2, 3), 7.0),
            torch.full_like(m, -2), m + A.scalar_tensor(3.0), torch.arange(2, 11, 3) * 1.0,
            A.empty.memory_format([2, 3]).zero_() + m[:2, :3],
            A.empty_strided([3], [1]).zero_() + 1.0, m.clone(), A.alias(m) * 2,
            m.repeat(2, 1, 3), x.flip(0, 2), x.diagonal(1, 1, 2), x.diagonal(-2, 0, 2),
            m.as_strided((3, 4), (6, 1), 2), t.contiguous().as_strided((2, 6), (1, 12)),
            t.as_strided((6, 2), (5, 30)), A.copy(m, m[0] * 3), m @ m.T,
            torch.bmm(x, x.transpose(1, 2)),
            torch.addmm(m[0, :4], m, m[:4].T, beta=0.5, alpha=2.0))  # fmt: skip


def _indexing(x, m, idx, rows):
    table = torch.arange(60.0).view(12, 5)
    return (x[idx], x[:, idx], x[:, :, idx], x[idx, :, idx], x[:, rows, idx[:2]],
            x[rows, :, 1], x[idx, idx], torch.index_select(x, 1, idx.abs()),
            torch.nn.functional.embedding(rows.abs(), table), torch.gather(m, 1, rows.abs()),
            torch.sort(m, 1), torch.sort(x, 0, descending=True),
            torch.sort(m, stable=True, dim=0), torch.topk(m, 2, 1, largest=False))  # fmt: skip


def _scatters(x, m, idx, rows):
    put = x.index_put((idx,), torch.ones(5, 6) * 9)
    put2 = x.clone()
    put2[:, rows.abs(), idx[:2]] = -4.0  # NOTE: indices (None, rows, idx): index_put in place
    acc = x.index_put((torch.tensor([1, 1, -3]),), x[:3] * 10, accumulate=True)
    masked = x.index_put((x > 1,), torch.tensor(0.0))
    spots = torch.tensor([[0, 5, 2], [1, 1, 4], [3, 0, 0], [2, 2, 2]])
    src = torch.arange(12.0).view(4, 3) - 5
    return (put, put2, acc, masked, m.scatter(1, spots, src), m.scatter(0, spots[:, :1].abs(), 2.5),
            A.scatter.reduce(m, 1, spots, src, reduce="multiply"),
            A.scatter.value_reduce(m, 1, spots, 2.0, reduce="add"), m.scatter_add(1, spots, src),
            m.scatter_reduce(1, spots, src, "amax"),
            m.scatter_reduce(1, spots, src, "mean", include_self=False),
            m.scatter_reduce(1, spots, src, "prod"), m.scatter_reduce(1, spots, src, "amin"),
            m.scatter_reduce(1, spots, src, "sum", include_self=False),
            m.slice_scatter(src, 1, 2, 5), m.slice_scatter(m[:2] * 0, 0, 1, 4, 2),
            m.masked_scatter(m > 0, torch.arange(24.0).view(4, 6)))  # fmt: skip


def _decomposed(x, m, cols):
    filled = m.clone().fill_(2.5)
    fold = torch.nn.functional.fold(cols, (3, 4), 2)  # col2im: overlapping patches add up
    grown = m.new_empty(0).resize_(5, 7).fill_(-1.0)  # resize (values never read) + full_like
    return (x[:, :1].squeeze(1) + 0, filled, torch.select_scatter(m, m[1] * 4, 0, 2),
            m.var(1, unbiased=False), torch.nn.functional.avg_pool1d(m[None], 3, 2, 1),
            torch.nn.functional.adaptive_avg_pool1d(m[None], 4), fold,
            m.clone().resize_(3, 8), m.clone().resize_(2, 5), grown)  # fmt: skip


def test_shapes_indexing_and_scatters() -> None:
    """(With the core ops torch's decompositions rewrite: they are in the program before its
    decomposition, and match eager after it.)"""
    cols = torch.from_numpy(RNG.uniform(-1, 1, (1, 4, 6)).astype("float32"))

    def ops(x, m, idx, rows, cols):
        return (*_shapes(x, m), *_indexing(x, m, idx, rows), *_scatters(x, m, idx, rows),
                *_decomposed(x, m, cols))  # fmt: skip

    name = "test_shapes_indexing_and_scatters"
    check(Fn(ops), (X, M, IDX, ROWS, cols), COVERS[name], EXACT, BY_TORCH[name])


def _sizes(x):
    assert A.sym_is_contiguous(x)
    count = (x > 0).sum().item()
    torch._check_is_size(count)
    t = x.t().contiguous()  # [6, batch]: its stride(0) is the batch
    return (x.reshape(x.numel()) * 2, torch.full((x.shape[0], 2), 1.5) + x[:, :1],
            torch.nonzero(x > 0.5), torch.arange(count) * 3,
            t * (t.stride(0) + t.storage_offset()))  # fmt: skip


def _strides_asked(program) -> None:
    """torch.export writes a stride as the sizes it is made of (``t.stride(0)`` in `_sizes` is
    ``sym_size(x, 0)``) and a storage offset as 0, so no exported program calls
    ``sym_stride`` or ``sym_storage_offset``: the program gets them back by hand, as a tracer
    that kept them would record ``t * (sym_stride(t, 0) + sym_storage_offset(t))``."""
    g = program.graph
    (mul,) = [n for n in g.nodes if n.target is A.mul.Tensor
              and getattr(n.args[0], "target", None) is A.clone.default]  # fmt: skip
    t = mul.args[0]
    with g.inserting_before(mul):
        stride = g.call_function(A.sym_stride.int, (t, 0))
        offset = g.call_function(A.sym_storage_offset.default, (t,))
        mul.args = (t, g.call_function(operator.add, (stride, offset)))


def test_sizes_from_dims_and_data() -> None:
    """Sizes of a dim marked dynamic, and sizes computed from the data (``nonzero``, an
    integer ``item()``, read when the model runs), are symbolic: one compiled model runs every
    batch."""
    batch = torch.export.Dim("batch", min=2, max=32)
    name = "test_sizes_from_dims_and_data"
    check(Fn(_sizes), (M,), COVERS[name], EXACT, BY_TORCH[name], dynamic={"xs": ({0: batch},)},
          more=[(M[:2],), (torch.cat([M, M, M]),)], edit=_strides_asked)  # fmt: skip
