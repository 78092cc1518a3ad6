"""Does the profile tell the truth? The total of ``model.profile(...)`` (warm-up calls, then the
median of the profiled calls) against the model's own time per call (`median_us`, as
``make demo`` measures it), for the demo's MLP and its ONNX CNN, in the same process,
interleaved over several rounds (the least disturbed round of each counts).

    python benchmarks/bench_profile.py [--rounds 5] [--threads 1]

Prints one line per model: time per call, profile total, and their ratio (issue 28's bar: the
profile total within 20% of the time per call).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def _rounds(model: Any, call: Callable[[], Any], rounds: int, **inputs: Any) -> tuple[float, float]:
    from kiln.examples.demo import median_us

    totals, per_call = [], []
    for _ in range(rounds):
        per_call.append(median_us(call, repeat=50, number=2))
        totals.append(model.profile(**inputs).total_us)
    return min(per_call), min(totals)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    os.environ.setdefault("KILN_NUM_THREADS", str(args.threads))
    import onnx

    import kiln
    from kiln.examples.models import MLP, mlp_weights
    from kiln.examples.models.cnn_onnx import cnn_onnx_model

    x = np.random.default_rng(0).standard_normal((32, 64)).astype("float32")
    weights = mlp_weights()
    mlp = kiln.compile(MLP)
    feeds = dict(zip(mlp._call.params, (x, *weights)))
    rows = [("MLP batch 32", *_rounds(mlp, lambda: mlp(x, *weights), args.rounds, **feeds))]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cnn.onnx"
        onnx.save(cnn_onnx_model(), path)
        cnn = kiln.compile(str(path))
        for batch in (1, 8):
            image = np.random.default_rng(1).standard_normal((batch, 3, 32, 32)).astype("float32")
            timed = _rounds(cnn, lambda i=image: cnn(image=i), args.rounds, image=image)
            rows.append((f"CNN batch {batch}", *timed))
    head = f"{'model':<14} {'us/call':>9} {'profile us':>11} {'profile/call':>13}"
    print(f"{head}  ({args.threads}t)")
    for name, per_call, total in rows:
        print(f"{name:<14} {per_call:>9.1f} {total:>11.1f} {total / per_call:>13.2f}")


if __name__ == "__main__":
    sys.exit(main())
