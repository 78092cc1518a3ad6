"""The real set, kiln against onnxruntime with their calls interleaved in one process.

    python benchmarks/bench_interleaved.py [--models NAME,...] [--rounds 11]
                                           [--processes 3] [--cache DIR] [--work DIR]

`bench_models.py` times each library in processes of its own, which is what a user runs; on a
shared machine the time of one configuration moves 10-50% from one process to the next (another
tenant's load, where the kernel put the pages), so a ratio of two processes' medians carries
that drift. Here one process loads both (kiln's compiled mode from a library exported once,
onnxruntime's CPU provider on the same ONNX file), alternates their calls ``--rounds`` times and
reports the ratio of medians; ``--processes`` such processes run one after another, and the
table gives each model's median ratio and its range. Both libraries then share the caches and
the core, as two models of one service would: a steadier comparison, not a substitute for
`bench_models.py`'s.

Models come from `real_models` (exported into its cache on first use); kiln's libraries are
compiled once into ``--work`` (default: a temporary folder) with the model cache off, so they
are this checkout's code.

One thread only: with two, the libraries' pools compete inside the process. onnxruntime's
workers spin after each run and hold the second core while kiln's call runs, whose worker then
backs off (`kiln.runtime.thread_pool`): measured on the 2-core Zen 3, kiln's ResNet-50 took
115 ms on "2 threads" here, its 1-thread time, against 62 ms in a process of its own. Compare
thread counts above 1 with `bench_models.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_ops  # noqa: E402 - the sibling scripts, importable once this folder is on the path
import real_models  # noqa: E402


def worker(names: list[str], work: Path, cache: Path, threads: int, rounds: int) -> None:
    """One process: every model's kiln and onnxruntime calls alternated; prints JSON lines."""
    import numpy as np

    from kiln.cli.bench_worker import RUNTIMES

    for name in names:
        with np.load(cache / f"{name}.npz") as data:
            feed = {k: data[k] for k in data.files}
        calls = {
            "kiln": RUNTIMES["kiln"](str(work / f"{name}.so"), feed, threads),
            "onnxruntime": RUNTIMES["onnxruntime"](str(cache / f"{name}.onnx"), feed, threads),
        }
        for call in calls.values():
            call()
            call()
        times: dict[str, list[float]] = {lib: [] for lib in calls}
        for _ in range(rounds):
            for lib, call in calls.items():
                t0 = time.perf_counter()
                call()
                times[lib].append(time.perf_counter() - t0)
        row = {lib: statistics.median(ts) * 1e3 for lib, ts in times.items()}
        print(json.dumps({"model": name, **row}), flush=True)


def compile_all(names: list[str], work: Path, cache: Path) -> None:
    """Export each model (`real_models.export`) and compile it into ``work/NAME.so``."""
    for name in names:
        onnx_path = real_models.export(name, cache)
        target = work / f"{name}.so"
        if target.exists():
            continue
        code = f"import kiln; kiln.compile({str(onnx_path)!r}).export({str(target)!r})"
        env = {**os.environ, "KILN_CACHE_DIR": str(work / "kiln-cache")}
        subprocess.run([sys.executable, "-c", code], check=True, env=env)


def run(args: argparse.Namespace, names: list[str], work: Path) -> list[dict[str, Any]]:
    cache = real_models.cache_dir(args.cache)
    compile_all(names, work, cache)
    rows: list[dict[str, Any]] = []
    for _ in range(args.processes):
        cmd = [sys.executable, __file__, "--worker", "--models", ",".join(names)]
        cmd += ["--threads", str(args.threads), "--rounds", str(args.rounds)]
        cmd += ["--work", str(work), "--cache", str(cache)]
        env = bench_ops.thread_env("kiln", args.threads)  # numpy only loads the inputs here
        out = subprocess.run(cmd, check=True, env=env, capture_output=True, text=True).stdout
        rows += [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return rows


def table(rows: list[dict[str, Any]], names: list[str], threads: int) -> str:
    lines = [
        "| model | threads | kiln (ms) | onnxruntime (ms) | onnxruntime / kiln | range |",
        "|---|---|---|---|---|---|",
    ]
    for name in names:
        mine = [r for r in rows if r["model"] == name]
        ratios = sorted(r["onnxruntime"] / r["kiln"] for r in mine)
        k = statistics.median(r["kiln"] for r in mine)
        o = statistics.median(r["onnxruntime"] for r in mine)
        ratio, spread = statistics.median(ratios), f"{ratios[0]:.2f}-{ratios[-1]:.2f}"
        lines.append(f"| {name} | {threads} | {k:.2f} | {o:.2f} | {ratio:.2f} | {spread} |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", help="comma-separated names (default: all of the real set)")
    p.add_argument("--threads", type=int, default=1, choices=[1], help="1 (see the docstring)")
    p.add_argument("--rounds", type=int, default=11, help="alternated calls per process")
    p.add_argument("--processes", type=int, default=3, help="worker processes, one by one")
    p.add_argument("--cache", type=Path, help="the real set's export cache (see real_models)")
    p.add_argument("--work", type=Path, help="keep kiln's libraries here (default: temp)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    names = args.models.split(",") if args.models else list(real_models.MODELS)
    unknown = [n for n in names if n not in real_models.MODELS]
    if unknown:
        known = ", ".join(real_models.MODELS)
        p.error(f"unknown model(s) {', '.join(unknown)}; the real set: {known}")
    if args.worker:
        worker(names, args.work, real_models.cache_dir(args.cache), args.threads, args.rounds)
        return
    print(bench_ops.machine())
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        print(table(run(args, names, work), names, args.threads))


if __name__ == "__main__":
    main()
