"""One small model per architecture family, as PyTorch users build them (torchvision, timm,
transformers; seeded random weights), for the torch.export and torch.compile tests.

Each family: a constructor, its example inputs and inputs of other sizes (batch, and sequence
for the text models), and the ``dims=`` that make those dims dynamic in ``kiln.compile``.
Configs are the smallest that keep the family's structure (hidden 32, one layer or block per
stage, 32x32 images; Swin's window needs 56x56, Whisper's encoder takes a fixed 32 frames): each
case's time is mostly torch.export's tracing and kiln's compile, which grow with the layers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

torch = pytest.importorskip("torch")


def torchvision_schemas() -> None:
    """torchvision's C extension does not load beside the CPU torch; its (pure Python) model
    code, which timm and transformers import too, only needs these two schemas to exist (as in
    benchmarks/dynamic_models.py)."""
    for name in ("nms", "qnms"):
        try:
            torch.library.define(f"torchvision::{name}", "(Tensor a, Tensor b, float c) -> Tensor")
        except RuntimeError:  # defined already
            pass


class LastHidden(torch.nn.Module):
    """A transformers model called with ``input_ids`` (and an ``attention_mask``), returning
    its last hidden state as one tensor."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: Any, attention_mask: Any = None) -> Any:
        if attention_mask is None:
            return self.model(input_ids).last_hidden_state
        return self.model(input_ids, attention_mask=attention_mask).last_hidden_state


class Features(torch.nn.Module):
    """The Whisper encoder on ``input_features``, returning its last hidden state."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_features: Any) -> Any:
        return self.model(input_features).last_hidden_state


def _hf(config_cls: str, model_cls: str, **cfg: Any) -> Any:
    transformers = pytest.importorskip("transformers")
    config = getattr(transformers, config_cls)(**cfg)
    model = getattr(transformers, model_cls)(config).eval()
    model.config.use_cache = False
    return model


def _timm(name: str, **cfg: Any) -> Any:
    timm = pytest.importorskip("timm")
    return timm.create_model(name, pretrained=False, num_classes=10, **cfg)


def _squeezenet() -> Any:
    torchvision = pytest.importorskip("torchvision")
    return torchvision.models.squeezenet1_1(num_classes=10)  # max pools with ceil_mode=True


def _whisper() -> Any:
    transformers = pytest.importorskip("transformers")
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    config = transformers.WhisperConfig(
        d_model=32, encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=64,
        num_mel_bins=8, max_source_positions=16,
    )  # fmt: skip
    return Features(WhisperEncoder(config))


TEXT = dict(vocab_size=100, max_position_embeddings=64)


@dataclass(frozen=True)
class Family:
    """A model family: how to build it and what to feed it."""

    build: Callable[[], Any]
    kind: str
    """"image" (x [batch, 3, side, side]), "audio" (features [batch, 8, 32]), "text" (ids
    [batch, seq]) or "masked" (ids and an attention mask with padding)."""
    side: int = 32

    def inputs(self, batch: int, seq: int = 7) -> tuple[Any, ...]:
        gen = torch.Generator().manual_seed(batch * 100 + seq)
        if self.kind == "image":
            return (torch.randn(batch, 3, self.side, self.side, generator=gen),)
        if self.kind == "audio":
            return (torch.randn(batch, 8, 32, generator=gen),)
        ids = torch.randint(0, 100, (batch, seq), generator=gen)
        if self.kind == "text":
            return (ids,)
        mask = torch.ones(batch, seq, dtype=torch.int64)
        mask[0, seq - 2 :] = 0  # the first sequence is padded
        return ids, mask

    @property
    def dims(self) -> dict[str, int]:
        """``kiln.compile``'s ``dims=`` making the batch (and sequence) dynamic."""
        return {"batch": 0} if self.kind in ("image", "audio") else {"batch": 0, "seq": 1}

    def example(self) -> tuple[Any, ...]:
        return self.inputs(2, 7)

    def others(self) -> list[tuple[Any, ...]]:
        """Inputs of other sizes: batch 3 (and sequence 5), then batch 1 (sequence 9)."""
        if self.kind in ("image", "audio"):
            return [self.inputs(3), self.inputs(1)]
        return [self.inputs(3, 5), self.inputs(1, 9)]


FAMILIES: dict[str, Family] = {
    "squeezenet": Family(_squeezenet, "image"),
    "convnext": Family(
        lambda: _timm("convnext_atto", depths=(1, 1, 1, 1), dims=(8, 16, 24, 32)), "image"
    ),
    "swin": Family(
        lambda: _timm("swin_tiny_patch4_window7_224", img_size=56, window_size=7, embed_dim=24,
                      depths=(1, 1), num_heads=(1, 2)),
        "image", side=56,
    ),
    "vit": Family(
        lambda: _timm("vit_tiny_patch16_224", img_size=32, patch_size=8, depth=1, embed_dim=32,
                      num_heads=2),
        "image",
    ),
    "bert": Family(
        lambda: LastHidden(_hf("BertConfig", "BertModel", hidden_size=32, num_hidden_layers=1,
                               num_attention_heads=2, intermediate_size=64, **TEXT)),
        "masked",
    ),
    "gpt2": Family(
        lambda: LastHidden(_hf("GPT2Config", "GPT2Model", vocab_size=100, n_embd=32, n_layer=1,
                               n_head=2, n_positions=64, bos_token_id=99, eos_token_id=99)),
        "masked",
    ),
    "llama": Family(
        lambda: LastHidden(_hf("LlamaConfig", "LlamaModel", hidden_size=32,
                               intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
                               num_key_value_heads=2, **TEXT)),
        "masked",
    ),
    "t5_encoder": Family(
        lambda: LastHidden(_hf("T5Config", "T5EncoderModel", vocab_size=100, d_model=32,
                               d_kv=16, d_ff=64, num_layers=1, num_heads=2)),
        "text",
    ),
    "whisper_encoder": Family(_whisper, "audio"),
}  # fmt: skip
"""The families of issue 26: a torchvision CNN with ceil_mode pooling, ConvNeXt, Swin, ViT,
BERT with an attention mask, GPT-2, a Llama-style decoder (grouped-query attention, rotary
embeddings), the T5 encoder and the Whisper encoder."""


def build(name: str) -> Any:
    """Family ``name``'s model in eval mode, its weights seeded by the name."""
    import zlib

    torchvision_schemas()  # timm and transformers import torchvision
    torch.manual_seed(zlib.crc32(name.encode()))
    return FAMILIES[name].build().eval()
