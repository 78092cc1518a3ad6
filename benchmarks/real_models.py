"""The real architectures of ``bench_models.py --set real``, built from library configs.

torchvision, timm and transformers models, constructed with ``pretrained=False`` / a config
(nothing is downloaded) after seeding torch, so their random weights are the same in every
process; 2-d batch norms get seeded statistics (`model_zoo.seed_statistics`). Image models take
``x`` [1, 3, 224, 224] and return their logits; text models take ``input_ids`` [1, 128] (a
vocabulary of 1000), the decoders GPT-2 and Llama also an all-ones ``attention_mask`` (see
`_decoder`), and return their last hidden state (`dynamic_models.FirstOutput`); the Whisper
encoder takes ``input_features`` [1, 80, 1500] (``max_source_positions`` 750, half of
Whisper's 30 s window) and returns its last hidden state.

Each model is exported once, with the TorchScript exporter as users run it
(``torch.onnx.export(dynamo=False, opset_version=17)``, `model_zoo.export_onnx`), into a cache
folder outside the checkout (`cache_dir`): ``NAME.onnx`` (inputs named as in ``NAME.npz``,
output ``out``), ``NAME.npz`` (its inputs) and ``NAME.json`` (the library versions and hashes
of this file and `model_zoo.py`: when one changes, the model is exported again). The torch worker of
`bench_models.py` rebuilds the weights from the seed (`build`), so no state dict is kept.

    python benchmarks/real_models.py [--cache DIR] [NAME ...]    # export (default: all)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # dynamic_models imports tests.relax.frontend.dynamic_models
sys.path.insert(0, str(Path(__file__).resolve().parent))

VOCAB = 1000
SEQ = 128


def _schemas() -> None:
    """torchvision's C extension does not load beside the CPU torch, and timm and transformers
    import torchvision too: its two schemas are defined first (`dynamic_models`)."""
    from dynamic_models import _torchvision_schemas

    _torchvision_schemas()


def _torchvision(name: str) -> Any:
    import torchvision

    return getattr(torchvision.models, name)(weights=None)


def _timm(name: str) -> Any:
    import timm

    return timm.create_model(name, pretrained=False)


def _hf(config_cls: str, model_cls: str, **cfg: object) -> Any:
    from dynamic_models import FirstOutput, _hf

    return FirstOutput(_hf(config_cls, model_cls, vocab_size=VOCAB, **cfg))


def _decoder(config_cls: str, model_cls: str, **cfg: object) -> Any:
    """A decoder-only model called with ``input_ids`` and an ``attention_mask`` (all ones).

    NOTE: called without a mask, transformers 5 looks for packed sequences in the position ids
    with ``torch.diff``, which the TorchScript exporter cannot export (``aten::diff``); deployed
    decoders take a mask anyway."""
    import torch
    from dynamic_models import _hf

    class LastHiddenState(torch.nn.Module):
        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            return self.model(input_ids, attention_mask=attention_mask).last_hidden_state

    return LastHiddenState(_hf(config_cls, model_cls, vocab_size=VOCAB, **cfg))


def _whisper_encoder() -> Any:
    import transformers
    from dynamic_models import FirstOutput
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    config = transformers.WhisperConfig(
        d_model=384, encoder_layers=4, encoder_attention_heads=6, encoder_ffn_dim=1536,
        num_mel_bins=80, max_source_positions=750, use_cache=False,
    )  # fmt: skip
    return FirstOutput(WhisperEncoder(config).eval())


def _randn(*shape: int) -> np.ndarray:
    return np.random.default_rng(0).standard_normal(shape).astype("float32")


def _image() -> dict[str, np.ndarray]:
    return {"x": _randn(1, 3, 224, 224)}


def _text() -> dict[str, np.ndarray]:
    return {"input_ids": np.random.default_rng(0).integers(0, VOCAB, (1, SEQ), dtype="int64")}


def _text_and_mask() -> dict[str, np.ndarray]:
    return {**_text(), "attention_mask": np.ones((1, SEQ), "int64")}


def _audio() -> dict[str, np.ndarray]:
    return {"input_features": _randn(1, 80, 1500)}


MODELS: dict[str, tuple[Callable[[], Any], Callable[[], dict[str, np.ndarray]], str]] = {
    "resnet50": (lambda: _torchvision("resnet50"), _image, "ResNet-50 (torchvision)"),
    "mobilenet_v2": (lambda: _torchvision("mobilenet_v2"), _image, "MobileNetV2 (torchvision)"),
    "mobilenet_v3_small": (lambda: _torchvision("mobilenet_v3_small"), _image,
                           "MobileNetV3-Small (torchvision)"),
    "efficientnet_b0": (lambda: _torchvision("efficientnet_b0"), _image,
                        "EfficientNet-B0 (torchvision)"),
    "squeezenet1_1": (lambda: _torchvision("squeezenet1_1"), _image,
                      "SqueezeNet 1.1 (torchvision)"),
    "densenet121": (lambda: _torchvision("densenet121"), _image, "DenseNet-121 (torchvision)"),
    "deit_tiny_patch16_224": (lambda: _timm("deit_tiny_patch16_224"), _image,
                              "DeiT-Tiny/16 (timm)"),
    "convnext_tiny": (lambda: _timm("convnext_tiny"), _image, "ConvNeXt-T (timm)"),
    "swin_tiny_patch4_window7_224": (lambda: _timm("swin_tiny_patch4_window7_224"), _image,
                                     "Swin-T, window 7 (timm)"),
    "mobilevit_xxs": (lambda: _timm("mobilevit_xxs"), _image, "MobileViT-XXS (timm)"),
    "bert": (lambda: _hf("BertConfig", "BertModel", num_hidden_layers=4), _text,
             "BERT-base encoder, 4 layers (768, 12 heads)"),
    "distilbert": (lambda: _hf("DistilBertConfig", "DistilBertModel"), _text,
                   "DistilBERT, 6 layers (768, 12 heads)"),
    "gpt2": (lambda: _decoder("GPT2Config", "GPT2Model", n_layer=4, n_embd=768, n_head=12,
                              bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1), _text_and_mask,
             "GPT-2, 4 layers (768, 12 heads)"),
    "llama": (lambda: _decoder("LlamaConfig", "LlamaModel", hidden_size=512,
                               num_hidden_layers=4, num_attention_heads=8,
                               num_key_value_heads=2, intermediate_size=1376), _text_and_mask,
              "Llama-style decoder, 4 layers (512, 8 heads, 2 KV heads)"),
    "t5_encoder": (lambda: _hf("T5Config", "T5EncoderModel", d_model=512, d_kv=64, d_ff=2048,
                               num_layers=6, num_heads=8), _text,
                   "T5-small encoder, 6 layers (512, 8 heads)"),
    "whisper_encoder": (_whisper_encoder, _audio, "Whisper-tiny encoder, 4 layers (384, 6 heads)"),
}  # fmt: skip
"""name -> (constructor, its inputs by name, description without the input size)."""

INPUT_SIZE = {_image: "224x224", _text: f"seq {SEQ}", _text_and_mask: f"seq {SEQ}",
              _audio: "80x1500 features"}  # fmt: skip
DESCRIPTIONS = {name: f"{desc}, {INPUT_SIZE[feeds]}" for name, (_, feeds, desc) in MODELS.items()}
"""name -> one line naming the model and its input size (the table's first column)."""


def build(name: str) -> Any:
    """Model ``name`` with its seeded weights, in eval mode, returning one tensor."""
    import torch
    from model_zoo import seed_statistics

    _schemas()
    torch.manual_seed(zlib.crc32(name.encode()))
    return seed_statistics(MODELS[name][0]().eval())


def inputs(name: str) -> dict[str, np.ndarray]:
    return MODELS[name][1]()


def cache_dir(override: Path | None = None) -> Path:
    """Where exports are kept: ``override``, else ``$KILN_BENCH_CACHE``, else
    ``~/.cache/kiln-bench/real``."""
    if override is not None:
        return override
    env = os.environ.get("KILN_BENCH_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "kiln-bench" / "real"


def _key() -> dict[str, str]:
    """What an export depends on besides the model's name: library versions, this file and
    `model_zoo` (`seed_statistics`, `export_onnx`)."""
    _schemas()
    import timm
    import torch
    import torchvision
    import transformers

    libs = (torch, torchvision, timm, transformers)
    key = {lib.__name__: lib.__version__ for lib in libs}
    for source in (Path(__file__), Path(__file__).with_name("model_zoo.py")):
        key[source.name] = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    return key


def export(name: str, cache: Path | None = None) -> Path:
    """``NAME.onnx`` in the cache, exported now unless an export with the same key is there."""
    from model_zoo import export_onnx

    folder = cache_dir(cache)
    onnx_path, meta_path = folder / f"{name}.onnx", folder / f"{name}.json"
    key = _key()
    if meta_path.exists() and onnx_path.exists() and json.loads(meta_path.read_text()) == key:
        return onnx_path
    folder.mkdir(parents=True, exist_ok=True)
    meta_path.unlink(missing_ok=True)
    feeds = inputs(name)
    data = export_onnx(build(name), feeds)
    tmp = onnx_path.with_suffix(".onnx.tmp")
    tmp.write_bytes(data)
    tmp.replace(onnx_path)
    np.savez(folder / f"{name}.npz", **feeds)
    meta_path.write_text(json.dumps(key, indent=1) + "\n")  # written last: the export is whole
    return onnx_path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help=f"default: all of {', '.join(MODELS)}")
    p.add_argument("--cache", type=Path, help="the cache folder (see cache_dir)")
    args = p.parse_args()
    for name in args.names or MODELS:
        t0 = time.perf_counter()
        path = export(name, args.cache)
        size = path.stat().st_size / 2**20
        print(f"{name}: {path} ({size:.1f} MiB, {time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
