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


def _kiln(path: str, feed: dict[str, np.ndarray], threads: int) -> Callable[[], Any]:
    import kiln

    model = kiln.load(path)
    args = [feed[p] for p in model._call.params]
    return lambda: model(*args)


def _ort(path: str, feed: dict[str, np.ndarray], threads: int) -> Callable[[], Any]:
    import onnxruntime as ort

    from kiln.relax.frontend.common import ident

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    named = {i.name: feed[i.name if i.name in feed else ident(i.name, "input")]
             for i in sess.get_inputs()}  # fmt: skip
    return lambda: sess.run(None, named)


def main(argv: list[str]) -> None:
    runtime, path, feed_path, threads, runs = argv
    with np.load(feed_path) as data:
        feed = {k: data[k] for k in data.files}
    call = (_kiln if runtime == "kiln" else _ort)(path, feed, int(threads))
    for _ in range(3):
        call()
    times = []
    for _ in range(int(runs)):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    print(json.dumps(times))


if __name__ == "__main__":
    main(sys.argv[1:])
