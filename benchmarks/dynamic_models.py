"""Writes the dynamic-shape model files of tests/relax/frontend/test_dynamic_models.py.

Each is a real architecture (transformers, timm, torchvision) built from a small config and
exported as users export it: ``torch.onnx.export`` with ``dynamic_axes`` (batch, or batch and
sequence). Float weights are not kept: each float initializer of 16 or more elements is stored
empty and marked, and the test fills it with seeded random values (`random_weights.fill`), so
the files stay small; integer initializers (position ids, shape constants) are kept.

Run from the checkout with transformers, timm, torchvision and onnxscript installed (they are
not test dependencies: the suite only reads the files): ``python -m benchmarks.dynamic_models
[name ...]``. `bench_dynamic.py` times the same files.
"""

from __future__ import annotations

import sys
import tempfile
import warnings
from pathlib import Path

import onnx
import torch

from tests.relax.frontend.dynamic_models.random_weights import MARK

HERE = Path(__file__).resolve().parent.parent / "tests/relax/frontend/dynamic_models"
TEXT = {"input_ids": {0: "batch", 1: "seq"}}
IMAGE = {"x": {0: "batch"}}


def _hf(config_cls: str, model_cls: str, **cfg: object) -> torch.nn.Module:
    import transformers

    config = getattr(transformers, config_cls)(**cfg)
    model = getattr(transformers, model_cls)(config).eval()
    model.config.use_cache = False
    return model


def _timm(name: str, **cfg: object) -> torch.nn.Module:
    import timm

    return timm.create_model(name, pretrained=False, num_classes=10, **cfg).eval()


def _torchvision_schemas() -> None:
    """torchvision's C extension does not load beside the CPU torch; its (pure Python) model
    code, which transformers and timm import too, only needs these two schemas to exist."""
    for name in ("nms", "qnms"):
        try:
            torch.library.define(f"torchvision::{name}", "(Tensor a, Tensor b, float c) -> Tensor")
        except RuntimeError:
            pass


_torchvision_schemas()


def _resnet50() -> torch.nn.Module:
    import torchvision

    return torchvision.models.resnet50(num_classes=10).eval()


SMALL = dict(vocab_size=100, max_position_embeddings=64)
MODELS = {
    "bert": lambda: _hf("BertConfig", "BertModel", hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, **SMALL),
    "distilbert": lambda: _hf("DistilBertConfig", "DistilBertModel", dim=32, n_layers=2,
                              n_heads=2, hidden_dim=64, **SMALL),
    "clip_text": lambda: _hf("CLIPTextConfig", "CLIPTextModel", hidden_size=32,
                             intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                             **SMALL),
    "gpt2": lambda: _hf("GPT2Config", "GPT2Model", vocab_size=100, n_embd=32, n_layer=2,
                        n_head=2, n_positions=64),
    "llama": lambda: _hf("LlamaConfig", "LlamaModel", hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         **SMALL),
    "t5_encoder": lambda: _hf("T5Config", "T5EncoderModel", vocab_size=100, d_model=32,
                              d_kv=16, d_ff=64, num_layers=2, num_heads=2),
    "vit": lambda: _timm("vit_tiny_patch16_224", img_size=32, patch_size=8, depth=2,
                         embed_dim=32, num_heads=2),
    "mobilevit": lambda: _timm("mobilevit_xxs"),
    "swin": lambda: _timm("swin_tiny_patch4_window7_224", img_size=56, window_size=7,
                          embed_dim=24, depths=(1, 1), num_heads=(1, 2)),
    "resnet50": _resnet50,
}  # fmt: skip
IMAGE_SIZE = {"vit": 32, "mobilevit": 64, "swin": 56, "resnet50": 32}
# NOTE: T5's dynamo export fails inside torch (a view of a transposed symbolic tensor), so it
# goes through the TorchScript exporter, as users of T5 do.
TORCHSCRIPT = {"t5_encoder"}


class FirstOutput(torch.nn.Module):
    """The model's first output (its last hidden state or logits) as one tensor."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.model(x)
        if hasattr(out, "last_hidden_state"):
            return out.last_hidden_state
        return out[0] if isinstance(out, (tuple, list)) else out


def export(name: str) -> Path:
    model = FirstOutput(MODELS[name]())
    if name in IMAGE_SIZE:
        size = IMAGE_SIZE[name]
        args, names, dyn = (torch.randn(2, 3, size, size),), ["x"], IMAGE
    else:
        args, names, dyn = (torch.randint(0, 100, (2, 8)),), ["input_ids"], TEXT
    with tempfile.TemporaryDirectory() as work, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = Path(work) / f"{name}.onnx"
        torch.onnx.export(
            model,
            args,
            str(raw),
            input_names=names,
            output_names=["out"],
            dynamic_axes=dyn,
            dynamo=name not in TORCHSCRIPT,
            opset_version=18,
        )
        proto = onnx.load(str(raw))
    strip_weights(proto)
    out = HERE / f"{name}.onnx"
    onnx.save(proto, str(out))
    return out


def strip_weights(proto: onnx.ModelProto) -> None:
    """Empty every float initializer of 16 or more elements, marked for `random_weights.fill`."""
    for t in proto.graph.initializer:
        count = 1
        for d in t.dims:
            count *= d
        if t.data_type == onnx.TensorProto.FLOAT and count >= 16:
            t.ClearField("raw_data")
            t.ClearField("float_data")
            t.doc_string = MARK
    proto.graph.ClearField("value_info")
    proto.ClearField("metadata_props")


if __name__ == "__main__":
    for name in sys.argv[1:] or MODELS:
        print(export(name))
