"""The ONNX importer on the model families, each against onnxruntime in both exec modes and, for
models with symbolic dims, at two values of every symbolic dim."""

from __future__ import annotations

import numpy as np

from tests.relax.frontend import models as M

torch = M.torch


def test_mlp_with_dynamic_batch() -> None:
    torch.manual_seed(0)
    model = M.export_onnx(M.MLP(), [torch.randn(2, 32)], ["x"], {"x": {0: "batch"}})
    M.check_vs_ort(model, [{"x": M.randn(1, 32)}, {"x": M.randn(7, 32, seed=1)}])


def test_cnn_with_dynamic_batch() -> None:
    torch.manual_seed(1)
    net = M.init_batch_norms(M.CNN())
    model = M.export_onnx(net, [torch.randn(1, 3, 16, 16)], ["img"], {"img": {0: "n"}})
    M.check_vs_ort(model, [{"img": M.randn(1, 3, 16, 16)}, {"img": M.randn(3, 3, 16, 16, seed=2)}])


def test_resnet_style_residual_network() -> None:
    torch.manual_seed(2)
    net = M.init_batch_norms(M.ResNet((8, 16), blocks=1))
    model = M.export_onnx(net, [torch.randn(1, 3, 32, 32)], ["x"])
    M.check_vs_ort(model, [{"x": M.randn(1, 3, 32, 32)}])


def test_transformer_encoder_layer_with_padding_mask() -> None:
    torch.manual_seed(3)
    x = torch.randn(2, 6, 32)
    keep = torch.ones(2, 6, dtype=torch.int64)
    model = M.export_onnx(M.EncoderLayer(), [x, keep], ["x", "keep"])
    keep_np = np.ones((2, 6), dtype="int64")
    keep_np[1, 4:] = 0  # the second sequence is padded
    M.check_vs_ort(model, [{"x": M.randn(2, 6, 32), "keep": keep_np}])


def test_decoder_only_lm_with_dynamic_sequence_length() -> None:
    torch.manual_seed(4)
    ids = torch.randint(0, 64, (2, 5))
    model = M.export_onnx(M.Decoder(), [ids], ["ids"], {"ids": {1: "seq"}})
    rng = np.random.default_rng(0)
    feeds = [{"ids": rng.integers(0, 64, (2, t)).astype("int64")} for t in (3, 11)]
    M.check_vs_ort(model, feeds)


def test_resnet18_at_224() -> None:
    import kiln

    torch.manual_seed(5)
    net = M.init_batch_norms(M.ResNet((64, 128, 256, 512), blocks=2, classes=1000))
    model = M.export_onnx(net, [torch.randn(1, 3, 224, 224)], ["x"])
    x = M.randn(1, 3, 224, 224)
    got = kiln.compile(model)(x=x).numpy()
    want = M.ort_run(model, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=M.TOL, atol=M.TOL)
