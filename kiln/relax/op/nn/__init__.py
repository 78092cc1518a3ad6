"""Neural-network operators: ``relax.op.nn.*`` (``R.nn.*`` in script)."""

from kiln.relax.op.binary import prelu
from kiln.relax.op.nn.activation import (
    celu,
    dropout,
    elu,
    gelu,
    gelu_tanh,
    hardsigmoid,
    hardswish,
    leakyrelu,
    log_softmax,
    mish,
    pad,
    relu,
    selu,
    shrink,
    silu,
    softmax,
    softplus,
    softsign,
    swish,
    thresholded_relu,
)
from kiln.relax.op.nn.attention import attention
from kiln.relax.op.nn.conv import adaptive_avg_pool2d, avg_pool2d, conv2d, max_pool2d
from kiln.relax.op.nn.norm import batch_norm, layer_norm

__all__ = [
    "adaptive_avg_pool2d",
    "attention",
    "avg_pool2d",
    "batch_norm",
    "celu",
    "conv2d",
    "dropout",
    "elu",
    "gelu",
    "gelu_tanh",
    "hardsigmoid",
    "hardswish",
    "layer_norm",
    "leakyrelu",
    "log_softmax",
    "max_pool2d",
    "mish",
    "pad",
    "prelu",
    "relu",
    "selu",
    "shrink",
    "silu",
    "softmax",
    "softplus",
    "softsign",
    "swish",
    "thresholded_relu",
]
