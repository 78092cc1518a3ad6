"""A relax MLP with a symbolic batch against the same MLP with a static batch, through
`kiln.compile` (FuseOps + LowerTE: one ``matmul + add + relu`` kernel per layer), same run.

    KILN_NUM_THREADS=1 python benchmarks/bench_symbolic.py [--batches 1,64,256]
                                                           [--dims 256,512,512,256]

Per batch size: the static model is compiled for that batch, the symbolic one once for any
batch; both are checked against numpy, then timed interleaved (``--rounds`` rounds of
``--calls`` calls each, alternating models), and the table shows the median and the best round
(per call). The ratio is symbolic / static (the bar: at most 1). NOTE: the static model uses
the packed matmul (`kiln.topi.x86.matmul`), which today repacks its weights on every call; the
symbolic one uses the register-tiled plain product (`kiln.topi.x86.dense.schedule_plain`).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

import kiln
from kiln import relax, tir


def mlp(batch: int | None, dims: list[int]) -> Any:
    """``relu(x @ w + b)`` per layer of ``dims``; ``batch`` None: a symbolic batch ``n``."""
    n: Any = tir.Var("n", "int64") if batch is None else batch
    x = relax.Var("x", relax.TensorStructInfo([n, dims[0]], "float32"))
    pairs = list(zip(dims, dims[1:]))
    ws = [
        relax.Var(f"w{i}", relax.TensorStructInfo([a, b], "float32"))
        for i, (a, b) in enumerate(pairs)
    ]
    bs = [
        relax.Var(f"b{i}", relax.TensorStructInfo([b], "float32")) for i, (_, b) in enumerate(pairs)
    ]
    bb = relax.BlockBuilder()
    with bb.function("main", [x, *ws, *bs]):
        with bb.dataflow():
            h: Any = x
            for w, b in zip(ws, bs):
                h = bb.emit(relax.op.nn.relu(relax.op.add(relax.op.matmul(h, w), b)))
            out = bb.emit_output(h)
        bb.emit_func_output(out)
    return bb.get()


def timed(
    models: dict[str, Any], args: list[Any], rounds: int, calls: int
) -> dict[str, list[float]]:
    """Seconds per call of each model, one sample per round, models alternating."""
    out: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(rounds):
        for name, model in models.items():
            model(*args)
            t0 = time.perf_counter()
            for _ in range(calls):
                model(*args)
            out[name].append((time.perf_counter() - t0) / calls)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", default="1,64,256")
    p.add_argument("--dims", default="256,512,512,256")
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--calls", type=int, default=5)
    a = p.parse_args()
    dims = [int(d) for d in a.dims.split(",")]
    rng = np.random.default_rng(0)
    ws = [
        (rng.standard_normal((m, n)) / np.sqrt(m)).astype("float32") for m, n in zip(dims, dims[1:])
    ]
    bs = [rng.standard_normal(n).astype("float32") for n in dims[1:]]
    symbolic = kiln.compile(mlp(None, dims))
    print("| batch | static median (best) | symbolic median (best) | symbolic / static |")
    print("|---|---|---|---|")
    for batch in (int(b) for b in a.batches.split(",")):
        static = kiln.compile(mlp(batch, dims))
        x = rng.standard_normal((batch, dims[0])).astype("float32")
        want = x
        for w, b in zip(ws, bs):
            want = np.maximum(want @ w + b, 0)
        models = {"static": static, "symbolic": symbolic}
        for model in models.values():
            got = model(x, *ws, *bs).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)
        t = timed(models, [x, *ws, *bs], a.rounds, a.calls)
        med = {k: statistics.median(v) * 1e6 for k, v in t.items()}
        best = {k: min(v) * 1e6 for k, v in t.items()}
        cells = [f"{med[k]:.1f} us ({best[k]:.1f})" for k in models]
        print(f"| {batch} | {cells[0]} | {cells[1]} | {med['symbolic'] / med['static']:.2f} |")


if __name__ == "__main__":
    main()
