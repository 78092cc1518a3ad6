"""Dynamic shapes: a model with symbolic dims against its static twin and onnxruntime, in one run.

    python benchmarks/bench_dynamic.py [--models cnn,resnet50,bert,gpt2,llama] [--threads 1,2]
                                       [--repeat 20] [--min-seconds 0.3] [--rounds 2]
                                       [--markdown benchmarks/README.md]

Models: ``make demo``'s CNN (symbolic batch) and the dynamic exports of the test suite
(tests/relax/frontend/dynamic_models: ResNet-50 with a symbolic batch; BERT, GPT-2 and a
Llama-style decoder with GQA and RoPE with symbolic batch and sequence), their float weights
filled from a fixed seed. Sizes: batch 1/4/8/16 for the image models; (batch, sequence) (1, 8),
(1, 32), (1, 64), (4, 32) for the text models (their configs hold 64 positions).

For every model and size, three callables run the same weights on the same inputs:

- **kiln dynamic**: the model compiled once with its symbolic dims, called at that size;
- **kiln buckets**: the model compiled once with every benchmarked size declared as a bucket
  (``dims={"batch": [...], "seq": [...]}``: fixed-size models picked per call), called through
  `kiln.compile`'s model (the per-call dims check and pick included);
- **kiln static**: the model compiled with the dims pinned to that size (``shape_dict``);
- **onnxruntime**: the dynamic model.

One worker process per (library, thread count) times every (model, size) with
`kiln.cli.bench_worker.time_calls` (3 warm-up calls, ``--repeat`` timed calls and more until they
add up to ``--min-seconds``); the parent runs ``--rounds`` rounds of all workers and reports
medians. Ratios: static / dynamic (1.0 = no cost for dynamic shapes; the bar is >= 0.91, within
10%) and onnxruntime / kiln dynamic (the bar is >= 1.0). A ``paired`` worker also calls the
dynamic and the static model alternately in one process (`paired_worker`) and reports the ratio
of their medians: the steadier figure where a machine's speed drifts between processes. Outputs
of both kiln variants must match onnxruntime's (rtol = atol = 2e-3), or the run fails.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_models import worker_env  # noqa: E402
from bench_ops import machine, update_readme  # noqa: E402

LIBS = ("dynamic", "buckets", "static", "onnxruntime")
KILN_LIBS = ("dynamic", "buckets", "static")
WORKERS = (*LIBS, "paired")
"""One process each; ``paired`` times kiln dynamic and static alternately (`paired_worker`)."""
ALL_MODELS = ("cnn", "resnet50", "bert", "gpt2", "llama")
IMAGE_SIZES = [(1,), (4,), (8,), (16,)]
TEXT_SIZES = [(1, 8), (1, 32), (1, 64), (4, 32)]  # the stored models hold 64 positions
TOL = 2e-3


def sizes(name: str) -> list[tuple[int, ...]]:
    return IMAGE_SIZES if name in ("cnn", "resnet50") else TEXT_SIZES


def bucket_dims(name: str) -> dict[str, list[int]]:
    """``dims=`` declaring every benchmarked size of ``name`` as a bucket."""
    if name in ("cnn", "resnet50"):
        return {"batch": sorted({s[0] for s in IMAGE_SIZES})}
    return {"batch": sorted({s[0] for s in TEXT_SIZES}), "seq": sorted({s[1] for s in TEXT_SIZES})}


def tag(size: tuple[int, ...]) -> str:
    return "x".join(map(str, size))


# -- preparing: model files, inputs, compiled libraries ---------------------------------------
def write_model(name: str, work: Path) -> tuple[str, list[int]]:
    """Write ``name``'s ONNX file (weights filled); its input name and per-sample image dims."""
    import onnx

    if name == "cnn":
        from kiln.examples.models.cnn_onnx import cnn_onnx_model

        proto = cnn_onnx_model()
    else:
        from tests.relax.frontend.dynamic_models.random_weights import fill

        proto = onnx.load(str(ROOT / "tests/relax/frontend/dynamic_models" / f"{name}.onnx"))
        fill(proto, seed=len(name))
    onnx.save(proto, str(work / f"{name}.onnx"))
    inp = proto.graph.input[0]
    rest = [d.dim_value for d in inp.type.tensor_type.shape.dim[1:]]
    return inp.name, rest


def feed_for(name: str, size: tuple[int, ...], rest: list[int]) -> np.ndarray:
    rng = np.random.default_rng(sum(size))
    if name in ("cnn", "resnet50"):
        return rng.standard_normal((size[0], *rest)).astype("float32")
    return rng.integers(0, 100, size).astype(np.int64)


def prepare(models: list[str], work: Path) -> None:
    """Every model file, input and kiln library (dynamic once, static per size), in this
    process: the timing workers only load."""
    import kiln

    for name in models:
        input_name, rest = write_model(name, work)
        path = str(work / f"{name}.onnx")
        kiln.compile(path).export(work / f"{name}-dynamic.so")
        kiln.compile(path, dims=bucket_dims(name))  # the buckets worker loads them from the cache
        for size in sizes(name):
            x = feed_for(name, size, rest)
            np.savez(work / f"{name}-{tag(size)}.npz", **{input_name: x})
            pinned = {input_name: x.shape}
            kiln.compile(path, shape_dict=pinned).export(work / f"{name}-static-{tag(size)}.so")


# -- timing -------------------------------------------------------------------------------------
def time_worker(lib: str, threads: int, models: list[str], work: Path, args: Any) -> None:
    from kiln.cli.bench_worker import RUNTIMES, time_calls

    for name in models:
        for size in sizes(name):
            with np.load(work / f"{name}-{tag(size)}.npz") as data:
                feed = {k: data[k] for k in data.files}
            path = {
                "buckets": "",
                "dynamic": f"{name}-dynamic.so",
                "static": f"{name}-static-{tag(size)}.so",
                "onnxruntime": f"{name}.onnx",
            }[lib]
            runtime = "onnxruntime" if lib == "onnxruntime" else "kiln"
            if lib == "buckets":
                call = bucketed(work / f"{name}.onnx", name, feed)
            else:
                call = RUNTIMES[runtime](str(work / path), feed, threads)
            out = call()
            first = out[0] if isinstance(out, (list, tuple)) else out
            np.save(work / f"out-{lib}-{threads}-{name}-{tag(size)}.npy", np.asarray(first))
            samples = time_calls(call, args.repeat)
            short = args.min_seconds - sum(samples)
            if short > 0:
                more = math.ceil(short / statistics.median(samples))
                samples += time_calls(call, more, warmup=0)
            row = {"model": name, "size": tag(size), "lib": lib, "threads": threads}
            print(json.dumps({**row, "samples": samples}))


def paired_worker(threads: int, models: list[str], work: Path, args: Any) -> None:
    """Dynamic and static alternately in one process, call by call: both see the same machine
    state (this machine's speed drifts by 20-60% between processes at sizes under 0.1 ms)."""
    import time

    from kiln.cli.bench_worker import RUNTIMES

    for name in models:
        for size in sizes(name):
            with np.load(work / f"{name}-{tag(size)}.npz") as data:
                feed = {k: data[k] for k in data.files}
            calls = [
                RUNTIMES["kiln"](str(work / f), feed, threads)
                for f in (f"{name}-dynamic.so", f"{name}-static-{tag(size)}.so")
            ]
            for call in calls * 3:
                call()
            t0 = time.perf_counter()
            calls[0]()
            calls[1]()
            pairs = max(args.repeat, math.ceil(2 * args.min_seconds / (time.perf_counter() - t0)))
            dyn, sta = [], []
            for _ in range(pairs):
                t0 = time.perf_counter()
                calls[0]()
                t1 = time.perf_counter()
                calls[1]()
                dyn.append(t1 - t0)
                sta.append(time.perf_counter() - t1)
            row = {"model": name, "size": tag(size), "threads": threads}
            print(json.dumps({**row, "lib": "paired-dynamic", "samples": dyn}))
            print(json.dumps({**row, "lib": "paired-static", "samples": sta}))


def bucketed(path: Path, name: str, feed: dict[str, np.ndarray]) -> Any:
    """A call of ``name`` compiled with its sizes as buckets (from kiln's model cache)."""
    import kiln

    model = kiln.compile(str(path), dims=bucket_dims(name))
    args = [feed[p] for p in model._call.params]
    return lambda: model(*args)


def collect(args: Any, models: list[str], threads: list[int], work: Path) -> dict:
    samples: dict[tuple, list[float]] = {}
    for _ in range(args.rounds):
        for n in threads:
            for lib in WORKERS:
                cmd = [sys.executable, __file__, "--worker", lib, "--threads", str(n),
                       "--models", ",".join(models), "--work", str(work), "--repeat",
                       str(args.repeat), "--min-seconds", str(args.min_seconds)]  # fmt: skip
                env = worker_env("kiln" if lib in (*KILN_LIBS, "paired") else lib, n)
                done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
                if done.returncode:
                    raise SystemExit(f"{lib} worker ({n} threads) failed:\n{done.stderr[-3000:]}")
                for line in done.stdout.splitlines():
                    r = json.loads(line)
                    key = (r["model"], r["size"], r["lib"], r["threads"])
                    samples.setdefault(key, []).extend(r["samples"])
    return samples


def check_outputs(models: list[str], threads: list[int], work: Path) -> None:
    for name in models:
        for size in sizes(name):
            for n in threads:
                ref = np.load(work / f"out-onnxruntime-{n}-{name}-{tag(size)}.npy")
                for lib in KILN_LIBS:
                    got = np.load(work / f"out-{lib}-{n}-{name}-{tag(size)}.npy")
                    what = f"{name} {tag(size)} {lib}"
                    np.testing.assert_allclose(got, ref, rtol=TOL, atol=TOL, err_msg=what)


def table(models: list[str], threads: list[int], samples: dict) -> str:
    lines = [
        "| model | size | threads | kiln dynamic (ms) | kiln buckets (ms) | kiln static (ms) "
        "| onnxruntime (ms) | static / dynamic | static / dynamic, paired | static / buckets "
        "| onnxruntime / dynamic | onnxruntime / buckets |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in models:
        for size in sizes(name):
            for n in threads:
                ms = {lib: statistics.median(samples[(name, tag(size), lib, n)]) * 1e3
                      for lib in LIBS}  # fmt: skip
                dyn, bkt, ort = ms["dynamic"], ms["buckets"], ms["onnxruntime"]
                pair = [statistics.median(samples[(name, tag(size), f"paired-{k}", n)])
                        for k in ("static", "dynamic")]  # fmt: skip
                lines.append(
                    f"| {name} | {tag(size)} | {n} | {dyn:.3f} | {bkt:.3f} | {ms['static']:.3f} "
                    f"| {ort:.3f} | {ms['static'] / dyn:.2f} | {pair[0] / pair[1]:.2f} "
                    f"| {ms['static'] / bkt:.2f} | {ort / dyn:.2f} | {ort / bkt:.2f} |"
                )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(ALL_MODELS))
    p.add_argument("--threads", default="1,2")
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--min-seconds", type=float, default=0.3)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--markdown", type=Path)
    p.add_argument("--worker", choices=WORKERS)
    p.add_argument("--work", type=Path)
    args = p.parse_args()
    models = args.models.split(",")
    threads = [int(t) for t in args.threads.split(",")]
    if args.worker == "paired":
        paired_worker(threads[0], models, args.work, args)
        return
    if args.worker:
        time_worker(args.worker, threads[0], models, args.work, args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        prepare(models, work)
        samples = collect(args, models, threads, work)
        check_outputs(models, threads, work)
    text = f"{machine()}\n\n{table(models, threads, samples)}"
    print(text)
    if args.markdown:
        update_readme(args.markdown, text, "bench_dynamic")


if __name__ == "__main__":
    main()
