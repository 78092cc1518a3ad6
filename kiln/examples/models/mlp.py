"""Perceptrons: ``MLP`` in the ``R`` script dialect and ``deep_mlp`` built layer by layer.

``MLP.main(x, w1, b1, w2, b2, w3, b3)``: ``x`` is ``(n, 64)`` float32 for any batch ``n``;
two hidden layers of 128 with ReLU, then 10 logits and a softmax. Weights are parameters (the
caller owns them, as a serving process loading them once would).
"""

# ruff: noqa: F821, F841 - names in R scripts are script variables, not Python names

from __future__ import annotations

import numpy as np

from kiln import relax
from kiln.ir import IRModule
from kiln.script import ir as I
from kiln.script import relax as R
from kiln.script import tir as T


@I.ir_module
class MLP:
    @R.function
    def main(
        x: R.Tensor(("n", 64), "float32"),
        w1: R.Tensor((64, 128), "float32"),
        b1: R.Tensor((128,), "float32"),
        w2: R.Tensor((128, 128), "float32"),
        b2: R.Tensor((128,), "float32"),
        w3: R.Tensor((128, 10), "float32"),
        b3: R.Tensor((10,), "float32"),
    ) -> R.Tensor(("n", 10), "float32"):
        n = T.int64()
        with R.dataflow():
            h1 = R.nn.relu(R.add(R.matmul(x, w1), b1))
            h2 = R.nn.relu(R.add(R.matmul(h1, w2), b2))
            logits = R.add(R.matmul(h2, w3), b3)
            p = R.nn.softmax(logits, axis=-1)
            R.output(p)
        return p


def mlp_weights(seed: int = 0) -> list[np.ndarray]:
    """Random weights for `MLP` (w1, b1, w2, b2, w3, b3), scaled to keep activations O(1)."""
    rng = np.random.default_rng(seed)
    shapes = [(64, 128), (128,), (128, 128), (128,), (128, 10), (10,)]
    return [(rng.standard_normal(s) / np.sqrt(s[0])).astype("float32") for s in shapes]


def mlp_reference(x: np.ndarray, *weights: np.ndarray) -> np.ndarray:
    """`MLP` in numpy."""
    w1, b1, w2, b2, w3, b3 = weights
    h = np.maximum(x @ w1 + b1, 0)
    h = np.maximum(h @ w2 + b2, 0)
    z = h @ w3 + b3
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def deep_mlp(layers: int = 20, width: int = 64, batch: int = 8) -> IRModule:
    """``main(x, w, b)``: ``layers`` times ``x = relu(x @ w + b)`` with one shared weight, on
    ``(batch, width)`` float32: every intermediate is one activation's size."""
    x = relax.Var("x", relax.TensorStructInfo([batch, width], "float32"))
    w = relax.Var("w", relax.TensorStructInfo([width, width], "float32"))
    b = relax.Var("b", relax.TensorStructInfo([width], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w, b]):
        with bb.dataflow():
            h: relax.Expr = x
            for _ in range(layers):
                h = bb.emit(relax.op.add(relax.op.matmul(h, w), b))
                h = bb.emit(relax.op.nn.relu(h))
            out = bb.emit_output(h)
        bb.emit_func_output(out)
    return bb.get()


def deep_mlp_reference(x: np.ndarray, w: np.ndarray, b: np.ndarray, layers: int) -> np.ndarray:
    """`deep_mlp` in numpy."""
    for _ in range(layers):
        x = np.maximum(x @ w + b, 0)
    return x
