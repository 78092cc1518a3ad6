"""Neural-network operators: ``relax.op.nn.*`` (``R.nn.*`` in script)."""

from kiln.relax.op.nn.activation import (
    dropout,
    gelu,
    gelu_tanh,
    log_softmax,
    pad,
    relu,
    silu,
    softmax,
)
from kiln.relax.op.nn.attention import attention
from kiln.relax.op.nn.conv import adaptive_avg_pool2d, avg_pool2d, conv2d, max_pool2d
from kiln.relax.op.nn.norm import batch_norm, layer_norm

__all__ = [
    "adaptive_avg_pool2d",
    "attention",
    "avg_pool2d",
    "batch_norm",
    "conv2d",
    "dropout",
    "gelu",
    "gelu_tanh",
    "layer_norm",
    "log_softmax",
    "max_pool2d",
    "pad",
    "relu",
    "silu",
    "softmax",
]
