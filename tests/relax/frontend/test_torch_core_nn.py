"""Core ATen network layers through torch.export against eager PyTorch, one compiled module per
test, with the arguments torch models vary: strides, padding, dilation, groups, ceil_mode,
count_include_pad, transposed convolutions with output padding, padding modes, align_corners,
sampling modes, attention masks (boolean, additive, causal) and grouped-query heads."""

from __future__ import annotations

import numpy as np
import pytest

from tests.relax.frontend.torch_core import MATH, check

torch = pytest.importorskip("torch")
F = torch.nn.functional
A = torch.ops.aten
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

RNG = np.random.default_rng(11)


def rand(*shape: int, scale: float = 1.0) -> torch.Tensor:
    return torch.from_numpy(RNG.uniform(-scale, scale, shape).astype("float32"))


IMG = rand(2, 4, 7, 9, scale=2)
VOL = rand(1, 4, 5, 6, 7, scale=2)
SEQ = rand(2, 4, 11, scale=2)

COVERS = {
    "test_convolutions_pools_and_norms": [
        "aten.convolution.default",
        "aten.max_pool2d_with_indices.default", "aten.avg_pool2d.default",
        "aten._adaptive_avg_pool2d.default", "aten.max_pool3d_with_indices.default",
        "aten.avg_pool3d.default", "aten._adaptive_avg_pool3d.default",
        "aten._native_batch_norm_legit_no_training.default",
        "aten._native_batch_norm_legit.no_stats",
        "aten.native_layer_norm.default", "aten.native_group_norm.default",
        "aten.native_dropout.default", "aten._native_batch_norm_legit_functional.default",
    ],
    "test_resampling_attention_and_bags": [
        "aten.reflection_pad1d.default", "aten.reflection_pad2d.default",
        "aten.reflection_pad3d.default", "aten.replication_pad1d.default",
        "aten.replication_pad2d.default", "aten.replication_pad3d.default",
        "aten.upsample_nearest2d.vec", "aten.upsample_bilinear2d.vec",
        "aten.upsample_nearest2d.default", "aten.grid_sampler_2d.default",
        "aten._cdist_forward.default", "aten._pdist_forward.default",
        "aten.scaled_dot_product_attention.default",
        "aten._native_multi_head_attention.default", "aten._embedding_bag.default",
        "aten._embedding_bag_forward_only.default",
    ],
}  # fmt: skip
BY_TORCH = {
    "test_convolutions_pools_and_norms": ["aten._native_batch_norm_legit.default"],
}
"""Ops torch rewrites before kiln sees them: in the program before its decomposition."""


def _convs(img, vol, seq, w2, wg, wt, w1, w3, w1t):
    return (F.conv2d(img, w2, torch.arange(6.0), stride=2, padding=1),
            F.conv2d(img, wg, None, stride=(1, 2), padding=(2, 0), dilation=2, groups=2),
            F.conv_transpose2d(img, wt, torch.ones(6), stride=2, padding=1, output_padding=1),
            F.conv_transpose2d(img, wt[:, :3], None, stride=(1, 3), padding=(2, 0),
                               dilation=(1, 2), groups=2),
            F.conv1d(seq, w1, None, stride=2, padding=2, dilation=2),
            F.conv_transpose1d(seq, w1t, torch.ones(3), stride=3, padding=1),
            F.conv3d(vol, w3, torch.ones(5), stride=(2, 1, 2), padding=(1, 0, 1),
                     dilation=(1, 2, 1)))  # fmt: skip


class _Norms(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bn = torch.nn.BatchNorm2d(4).eval()
        self.bn.running_mean.uniform_(-1, 1)
        self.bn.running_var.uniform_(0.5, 2)
        self.bn.weight.data.uniform_(0.5, 1.5)
        self.register_buffer("mean", torch.linspace(-1, 1, 4))
        self.register_buffer("var", torch.linspace(0.5, 2, 4))

    def forward(self, img, vol):
        return (F.max_pool2d(img, 3, 2, 1), F.max_pool2d(img, 2, ceil_mode=True),
                F.avg_pool2d(img, 3, 2, 1, count_include_pad=False),
                F.avg_pool2d(img, 2, ceil_mode=True), F.adaptive_avg_pool2d(img, (3, 4)),
                F.max_pool3d(vol, 2, (1, 2, 2), 1), F.max_pool3d(vol, 2, ceil_mode=True),
                F.avg_pool3d(vol, 3, 2, 1), F.avg_pool3d(vol, 3, 2, 1, count_include_pad=False),
                F.adaptive_avg_pool3d(vol, (2, 3, 4)), self.bn(img),
                F.batch_norm(img, None, None, training=True),
                A._native_batch_norm_legit.default(img, None, None, self.mean.clone(),
                                                   self.var.clone(), False, 0.1, 1e-5)[0],
                F.layer_norm(img, (7, 9)), F.group_norm(img, 2, torch.arange(4.0),
                                                        torch.ones(4)),
                A.native_dropout(img, 0.5, False)[0] + 1)  # fmt: skip


class _Layers(torch.nn.Module):
    """The convolutions, then the pools and norms."""

    def __init__(self) -> None:
        super().__init__()
        self.norms = _Norms()

    def forward(self, img, vol, seq, *weights):
        return (*_convs(img, vol, seq, *weights), *self.norms(img, vol))


def test_convolutions_pools_and_norms() -> None:
    weights = (rand(6, 4, 3, 3), rand(4, 2, 3, 3), rand(4, 6, 3, 3), rand(5, 4, 3),
               rand(5, 4, 2, 3, 2), rand(4, 3, 4))  # fmt: skip
    name = "test_convolutions_pools_and_norms"
    check(_Layers(), (IMG, VOL, SEQ, *weights), COVERS[name], MATH, BY_TORCH[name])


def _resampling(img, vol, seq, grid, pts, other):
    return (F.pad(seq, (2, 3), mode="reflect"), F.pad(img, (1, 2, 3, 0), mode="reflect"),
            F.pad(vol, (1, 1, 2, 0, 0, 3), mode="reflect"), F.pad(seq, (3, 1), mode="replicate"),
            F.pad(img, (0, 2, 4, 1), mode="replicate"),
            F.pad(vol, (2, 0, 1, 1, 3, 2), mode="replicate"),
            F.interpolate(img, scale_factor=2, mode="nearest"),
            F.interpolate(img, size=(5, 13), mode="nearest"),
            F.interpolate(img, scale_factor=1.5, mode="bilinear"),
            F.interpolate(img, size=(4, 17), mode="bilinear", align_corners=True),
            A.upsample_nearest2d.default(img, [4, 12]),
            F.grid_sample(img, grid, align_corners=False),
            F.grid_sample(img, grid, mode="nearest", padding_mode="border", align_corners=True),
            F.grid_sample(img, grid, padding_mode="reflection"),
            torch.cdist(pts, other), torch.cdist(pts, other, p=1.0),
            torch.cdist(pts, other, p=float("inf")), torch.cdist(pts, other, p=3.0),
            F.pdist(pts[0]))  # fmt: skip


class _Attention(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(8, 2, batch_first=True).eval()
        self.bag = torch.nn.EmbeddingBag(10, 3, mode="max")

    def forward(self, q, k, v, mask, x, ids, offsets, pad):
        m = self.mha
        args = (x, x, x, 8, 2, m.in_proj_weight, m.in_proj_bias, m.out_proj.weight,
                m.out_proj.bias)  # fmt: skip
        native = A._native_multi_head_attention(*args, need_weights=False)[0]
        weights = A._native_multi_head_attention(*args, pad, need_weights=True, mask_type=1)
        return (F.scaled_dot_product_attention(q, k, v),
                F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
                F.scaled_dot_product_attention(q, k, v, attn_mask=mask.float() * -2.0),
                F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3),
                F.scaled_dot_product_attention(q, k[:, :2], v[:, :2], enable_gqa=True),
                native, weights[0], weights[1],
                F.embedding_bag(ids, torch.arange(30.0).view(10, 3), offsets, mode="sum",
                                per_sample_weights=ids * 0.5 - 1, padding_idx=4),
                self.bag(ids, offsets))  # fmt: skip


class _Resampling(torch.nn.Module):
    """Padding, resampling and distances, then attention and bags."""

    def __init__(self) -> None:
        super().__init__()
        self.attention = _Attention()

    def forward(self, img, vol, seq, grid, pts, other, *rest):
        return (*_resampling(img, vol, seq, grid, pts, other), *self.attention(*rest))


def test_resampling_attention_and_bags() -> None:
    grid = rand(2, 3, 5, 2, scale=1.3)  # points outside the image too
    q, k, v = rand(2, 4, 5, 8), rand(2, 4, 6, 8), rand(2, 4, 6, 8)
    mask = torch.from_numpy(RNG.uniform(0, 1, (5, 6)) > 0.3)
    mask[:, 0] = True  # every query row keeps a key
    ids = torch.tensor([1, 4, 4, 9, 0, 2, 7])
    offsets = torch.tensor([0, 3, 3, 5])  # an empty bag
    pad = torch.tensor([[False] * 6 + [True] * 1, [False] * 7])
    args = (IMG, VOL, SEQ, grid, rand(2, 5, 3), rand(2, 4, 3),
            q, k, v, mask, rand(2, 7, 8), ids, offsets, pad)  # fmt: skip
    check(_Resampling(), args, COVERS["test_resampling_attention_and_bags"], MATH)
