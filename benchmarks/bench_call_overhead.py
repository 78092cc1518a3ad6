"""Per-call overhead of an empty exposed kiln function called from Python (target: <= 2 us).

The function takes three float32 tensors of symbolic length n and, like every function lowered
from TE, is ``tir.noalias`` with one output (C), so every call runs the whole packed-API entry:
argument count, kind, dtype, ndim, device, strides and shape checks, binding n, the overlap
checks of C against A and B, then the typed function (a store into C that never runs). Numbers
are medians over many samples of many calls each, next to a plain Python no-op with the same
arguments, to the same kiln call with arguments already converted to tvm-ffi tensors (which
skips numpy's DLPack export), and to the raw tvm-ffi function without kiln's Python call path.

    python benchmarks/bench_call_overhead.py [--samples 50] [--calls 20000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import kiln
from kiln import tir

TARGET_US = 2.0


def empty_kernel() -> tir.PrimFunc:
    """``empty(A, B, C)`` over float32[n] buffers (noalias; C written only when n < 0)."""
    n = tir.Var("n")
    params = tuple(tir.Var(name, "handle") for name in "ABC")
    bufs = {p: tir.decl_buffer((n,), "float32", p.name) for p in params}
    a, b, c = bufs.values()
    zero = tir.const(0, "int32")
    body = tir.IfThenElse(n < zero, tir.BufferStore(c, a[zero] + b[zero], (zero,)))
    attrs = {"global_symbol": "empty", "tir.noalias": True}
    return tir.PrimFunc(params, body, buffer_map=bufs, attrs=attrs)


def per_call_us(fn: Callable[..., Any], args: tuple[Any, ...], samples: int, calls: int) -> float:
    """Median over ``samples`` of the mean time of ``calls`` calls, in microseconds."""
    for _ in range(calls // 10):
        fn(*args)
    results = []
    for _ in range(samples):
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        results.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(results)


def noop(a: Any, b: Any, c: Any) -> None:
    """The Python baseline: a call that does nothing."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--calls", type=int, default=20000)
    opts = parser.parse_args(argv)
    func = kiln.build(empty_kernel())["empty"]
    arrays = tuple(np.zeros(1024, dtype="float32") for _ in range(3))
    tensors = tuple(kiln.tensor(a) for a in arrays)
    kiln_us = per_call_us(func, arrays, opts.samples, opts.calls)
    tensor_us = per_call_us(func, tensors, opts.samples, opts.calls)
    raw = getattr(func, "ffi_function", func)  # older kiln: the function is the raw one
    raw_us = per_call_us(raw, arrays, opts.samples, opts.calls)
    noop_us = per_call_us(noop, arrays, opts.samples, opts.calls)
    runs = f"(median of {opts.samples} samples x {opts.calls} calls)"
    print(f"kiln call, 3 numpy float32 arrays : {kiln_us:7.3f} us  {runs}")
    print(f"kiln call, 3 tvm-ffi tensors      : {tensor_us:7.3f} us")
    print(f"raw tvm-ffi function, numpy arrays: {raw_us:7.3f} us")
    print(f"Python no-op call, same arguments : {noop_us:7.3f} us")
    extra = kiln_us - noop_us
    print(f"kiln overhead over a Python call  : {extra:7.3f} us ({kiln_us / noop_us:.1f}x)")
    ok = kiln_us <= TARGET_US
    print(f"target <= {TARGET_US} us: {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
