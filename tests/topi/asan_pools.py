"""Pooling kernels whose windows reach the input's edges (``ceil_mode``, padding, dilation; NCHW,
channel-blocked NCHWc with the x86 tiled schedule, symbolic extents), each built and run once
on inputs of exactly their size.

``python -m tests.topi.asan_pools`` is what `test_pool_asan` runs in a child process whose
``KILN_CC`` adds AddressSanitizer flags and whose ``LD_PRELOAD`` loads the ASan runtime: a read
past an input's end aborts it. Prints ``ran <name>`` per kernel. The inputs are separate heap
arrays, so a window of the last channel that reads a row below the input reads past the end.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

import kiln
from kiln import te, tir, topi
from kiln.arith import simplify
from kiln.tir.functor import substitute
from kiln.topi.nn.window_any import pool2d_any

_MAX, _AVG = topi.nn.max_pool2d, topi.nn.avg_pool2d


Made = tuple[te.Tensor, te.Tensor, dict[tir.Var, int]]
"""A kernel's input, output and the values its symbolic extents take in the run."""


def _static(shape: tuple[int, ...], op: Callable[..., te.Tensor], **kw: Any) -> Callable[[], Made]:
    def make() -> Made:
        x = te.placeholder(shape, name="x")
        return x, op(x, **kw), {}

    return make


def _symbolic() -> Made:
    """A padded max pool over symbolic extents (3x3, stride 2, pads 1, 0, 1, 1), run on 9x8."""
    h, w = te.var("h", "int64"), te.var("w", "int64")
    x = te.placeholder((1, 4, h, w), name="x")
    out = (1, 4, (h + 2 - 3) // 2 + 1, (w + 1 - 3) // 2 + 1)
    return x, pool2d_any(x, "max", out, (3, 3), (2, 2), (1, 0, 1, 1)), {h: 9, w: 8}


def _shape(t: te.Tensor, env: dict[tir.Var, int]) -> tuple[int, ...]:
    """``t``'s extents with the symbolic ones bound to ``env``."""
    values = {v: tir.const(n, v.dtype) for v, n in env.items()}
    return tuple(int(simplify(substitute(d, values)).value) for d in t.shape)


KERNELS: dict[str, Callable[[], Made]] = {
    "max_ceil_nchw": _static((1, 4, 12, 12), _MAX, pool_size=3, strides=2, ceil_mode=True),
    "avg_ceil_nchw": _static((1, 3, 9, 10), _AVG, pool_size=(2, 3), strides=(2, 2), ceil_mode=True),
    "max_ceil_nchwc": _static((1, 2, 11, 11, 16), _MAX, pool_size=3, strides=2, ceil_mode=True),
    "avg_ceil_nchwc": _static(
        (1, 2, 7, 9, 16),
        _AVG,
        pool_size=3,
        strides=2,
        padding=(1, 0, 0, 0),
        ceil_mode=True,
        count_include_pad=False,
    ),
    "max_dilated_ceil": _static(
        (1, 2, 10, 9), _MAX, pool_size=2, strides=3, dilation=(2, 3), ceil_mode=True
    ),
    "avg_dilated_asym": _static(
        (1, 2, 8, 8),
        _AVG,
        pool_size=3,
        strides=1,
        padding=(0, 2, 2, 0),
        dilation=2,
        ceil_mode=True,
    ),
    "max_symbolic": _symbolic,
}


def main() -> int:
    # NOTE: the ASan runtime is already loaded in this process; the compilers kiln starts need
    # none (preloaded, it slows every gcc, as and ld run: a third of the CPU time).
    os.environ.pop("LD_PRELOAD", None)
    rng = np.random.default_rng(0)
    for name, make in KERNELS.items():
        x, y, env = make()
        fn = kiln.build_op([y], [x, y])
        fn(
            rng.standard_normal(_shape(x, env)).astype("float32"),
            np.zeros(_shape(y, env), "float32"),
        )
        print(f"ran {name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
