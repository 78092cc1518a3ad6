"""CPU (x86) implementations and default schedules of the compute-heavy operators.

`dense.matmul` / `dense.dense` / `dense.batch_matmul` (and `conv2d.conv2d_nchw`) compute the
same values as `kiln.topi.nn`, as packed and padded stages that `schedule_matmul`
(`schedule_conv2d_nchw`) turns into register-blocked, vectorized, parallel kernels. The
schedules also accept the plain `kiln.topi.nn` computes (a simpler tiled schedule). Pools over
channel-blocked tensors get `pool.schedule_pool_nchwc`; `attention.attention` is computed one
block of query rows at a time. Importing this package registers all of
them with `kiln.topi.schedule_for` (see `register`).
"""

from kiln.topi.x86 import register as _register  # noqa: F401  (plugs into schedule_for)
from kiln.topi.x86.attention import attention
from kiln.topi.x86.conv2d import conv2d_nchw, schedule_conv2d_nchw
from kiln.topi.x86.conv2d_nchwc import conv2d_nchwc, schedule_conv2d_nchwc
from kiln.topi.x86.dense import (
    batch_matmul,
    dense,
    matmul,
    matmul_packed,
    schedule_batch_matmul,
    schedule_dense,
    schedule_matmul,
)

__all__ = [
    "attention",
    "batch_matmul",
    "conv2d_nchw",
    "conv2d_nchwc",
    "dense",
    "matmul",
    "matmul_packed",
    "schedule_batch_matmul",
    "schedule_conv2d_nchw",
    "schedule_conv2d_nchwc",
    "schedule_dense",
    "schedule_matmul",
]
