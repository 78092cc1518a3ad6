"""One timing measurement of `kiln bench`, in a process of its own (so the thread count is set
before any runtime starts): prints the per-call times in seconds as a JSON list.

    python -m kiln.cli.bench_worker kiln model.so inputs.npz THREADS RUNS
    python -m kiln.cli.bench_worker onnxruntime model.onnx inputs.npz THREADS RUNS
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import kiln


def _kiln(path: str, feed: dict[str, np.ndarray], threads: int) -> Callable[[], Any]:
    model = kiln.load(path)
    args = [feed[p] for p in model._call.params]
    return lambda: model(*args)


def _ort(path: str, feed: dict[str, np.ndarray], threads: int) -> Callable[[], Any]:
    import onnxruntime as ort

    # NOTE: must stay a function-level import, after onnxruntime's: it loads kiln's runtime,
    # whose OpenMP defaults (`config.apply_openmp_defaults`) must not reach onnxruntime's start
    from kiln.relax.frontend.common import ident

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    named = {i.name: feed[i.name if i.name in feed else ident(i.name, "input")]
             for i in sess.get_inputs()}  # fmt: skip
    return lambda: sess.run(None, named)


RUNTIMES: dict[str, Callable[[str, dict[str, np.ndarray], int], Callable[[], Any]]] = {
    "kiln": _kiln,
    "onnxruntime": _ort,
}
"""runtime name -> (model path, inputs by name, threads) -> a call running the model once."""


def time_calls(call: Callable[[], Any], runs: int, warmup: int = 3) -> list[float]:
    """Seconds each of ``runs`` calls of ``call`` took, after ``warmup`` untimed calls."""
    for _ in range(warmup):
        call()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return times


def main(argv: list[str]) -> None:
    runtime, path, feed_path, threads, runs = argv
    with np.load(feed_path) as data:
        feed = {k: data[k] for k in data.files}
    call = RUNTIMES[runtime](path, feed, int(threads))
    print(json.dumps(time_calls(call, int(runs))))


if __name__ == "__main__":
    main(sys.argv[1:])
