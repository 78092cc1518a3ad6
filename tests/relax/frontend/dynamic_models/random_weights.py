"""Seeded random weights for the stored dynamic-shape models (written by
benchmarks/dynamic_models.py)."""

from __future__ import annotations

import numpy as np

MARK = "kiln-test: random weights"
"""The doc string of an initializer stored without its data."""


def fill(proto: object, seed: int = 0) -> None:
    """Give every marked float initializer of ``proto`` (an onnx.ModelProto, changed in place)
    seeded values: matrices and kernels ~ N(0, 1/fan_in), vectors (biases, norm scales) in
    [0.5, 1.5]."""
    from onnx import numpy_helper

    rng = np.random.default_rng(seed)
    for t in proto.graph.initializer:  # type: ignore[attr-defined]
        if t.doc_string != MARK:
            continue
        dims = tuple(t.dims)
        if len(dims) >= 2:
            fan_in = int(np.prod(dims[1:]))
            values = rng.standard_normal(dims) / np.sqrt(fan_in)
        else:
            values = rng.uniform(0.5, 1.5, dims)
        t.CopyFrom(numpy_helper.from_array(values.astype(np.float32), t.name))
