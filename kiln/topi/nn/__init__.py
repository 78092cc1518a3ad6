"""Neural-network operators: activations, attention, matrix products, convolution, softmax,
normalization and pooling."""

from kiln.topi.nn.activation import (
    celu,
    elu,
    hardsigmoid,
    hardswish,
    leaky_relu,
    mish,
    prelu,
    selu,
    shrink,
    softplus,
    softsign,
    swish,
    thresholded_relu,
)
from kiln.topi.nn.attention import attention
from kiln.topi.nn.conv2d import conv2d_nchw
from kiln.topi.nn.conv2d_nchwc import conv2d_nchwc
from kiln.topi.nn.dense import batch_matmul, dense, matmul
from kiln.topi.nn.dense_packed import matmul_packed
from kiln.topi.nn.norm import batch_norm, layer_norm
from kiln.topi.nn.pool import avg_pool2d, global_avg_pool2d, max_pool2d
from kiln.topi.nn.softmax import log_softmax, softmax

__all__ = [
    "attention",
    "avg_pool2d",
    "batch_matmul",
    "batch_norm",
    "celu",
    "conv2d_nchw",
    "conv2d_nchwc",
    "dense",
    "elu",
    "global_avg_pool2d",
    "hardsigmoid",
    "hardswish",
    "layer_norm",
    "leaky_relu",
    "log_softmax",
    "matmul",
    "matmul_packed",
    "max_pool2d",
    "mish",
    "prelu",
    "selu",
    "shrink",
    "softmax",
    "softplus",
    "softsign",
    "swish",
    "thresholded_relu",
]
