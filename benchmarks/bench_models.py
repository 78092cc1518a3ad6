"""Whole models: kiln (compiled mode) against onnxruntime and torch eager, in one run.

    python benchmarks/bench_models.py [--models mlp-b1,mlp-b64,cnn,resnet18,encoder,decoder]
                                      [--threads 1,2] [--repeat 20] [--min-seconds 0.3]
                                      [--rounds 2]
                                      [--markdown benchmarks/README.md] [--profile resnet18]

Models (`model_zoo.py`): an MLP at batch 1 and 64, a small CNN, ResNet-18 at 224x224, a
transformer encoder layer at 128x256 and a decoder-only transformer at sequence 64. Each is
built with torch from a fixed seed and exported to ONNX once, so the three libraries run the
same weights on the same inputs.

Steps, each in processes of its own:

- **compile**: per model, ``kiln.compile(model.onnx)`` in a fresh process with an empty
  ``KILN_CACHE_DIR`` (the cold compile time: import, passes, C compiler, writing the model
  cache), then again in a second fresh process with the same cache (the cached compile time: a
  load from kiln's model cache); the second exports the library the kiln worker loads. Both
  exclude importing kiln itself (see `compile_worker`).
- **time**: one worker process per (library, thread count), started with every thread-count
  variable set (`bench_ops.thread_env`; ``OPENBLAS_CORETYPE`` / ``OPENBLAS_L2_SIZE`` unset in the
  onnxruntime and torch workers only), times every model with `kiln.cli.bench_worker.time_calls`
  (the timing loop of ``kiln bench``): 3 warm-up calls, then ``--repeat`` timed calls, and more
  until they add up to ``--min-seconds`` (20 calls of a 0.2 ms model span 4 ms, one noisy moment
  of a shared machine; 0.3 s spans many). The
  parent runs ``--rounds`` rounds of all workers, so a change in machine load hits every library
  alike, and reports the median of all timed calls.
- **check**: each worker saves its outputs; kiln's and torch's must match onnxruntime's
  (rtol = atol = 2e-3), or the run fails.

Speed ratios are the other library's time over kiln's (above 1: kiln is faster). ``--profile
MODEL`` also prints kiln's per-kernel profile of that model (what ``kiln profile`` prints) and
the share of its time spent in convolution kernels.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ops import machine, thread_env, update_readme  # noqa: E402

LIBS = ("kiln", "onnxruntime", "torch")
ALL_MODELS = ("mlp-b1", "mlp-b64", "cnn", "resnet18", "encoder", "decoder")
TOL = 2e-3


# -- workers ---------------------------------------------------------------------------------------
def worker_env(lib: str, threads: int) -> dict[str, str]:
    """A worker's environment: every thread count set to ``threads`` (`bench_ops.thread_env`),
    and, outside kiln's worker, without the OpenBLAS tuning variables this machine sets (they
    slow numpy's and torch's BLAS)."""
    env = thread_env("numpy" if lib != "kiln" else "kiln", threads)
    if lib != "kiln":
        env.pop("OPENBLAS_CORETYPE", None)
        env.pop("OPENBLAS_L2_SIZE", None)
    return env


def _outputs(value: Any) -> list[np.ndarray]:
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _outputs(v)]
    if hasattr(value, "detach"):
        return [value.detach().numpy()]
    return [value.numpy() if hasattr(value, "numpy") else np.asarray(value)]


def _torch_call(work: Path, name: str, feed: dict[str, np.ndarray], threads: int) -> Any:
    import model_zoo
    import torch

    torch.set_num_threads(threads)
    module = model_zoo.build(name)
    module.load_state_dict(torch.load(work / f"{name}.pt"))
    args = [torch.from_numpy(v) for v in feed.values()]

    def call() -> Any:
        with torch.inference_mode():
            return module(*args)

    return call


def time_worker(
    lib: str, threads: int, models: list[str], work: Path, repeat: int, min_seconds: float
) -> None:
    """Time ``lib`` on every model: one JSON line per model; outputs saved beside the inputs."""
    from kiln.cli.bench_worker import RUNTIMES, time_calls

    for name in models:
        with np.load(work / f"{name}.npz") as data:
            feed = {k: data[k] for k in data.files}
        if lib == "torch":
            call = _torch_call(work, name, feed, threads)
        else:
            path = work / (f"{name}.so" if lib == "kiln" else f"{name}.onnx")
            call = RUNTIMES[lib](str(path), feed, threads)
        np.savez(work / f"out-{lib}-{threads}-{name}.npz", *_outputs(call()))
        samples = time_calls(call, repeat)
        short = min_seconds - sum(samples)
        if short > 0:
            samples += time_calls(call, math.ceil(short / statistics.median(samples)), warmup=0)
        print(json.dumps({"model": name, "lib": lib, "threads": threads, "samples": samples}))


def compile_worker(name: str, work: Path) -> None:
    """``kiln.compile`` of one model, timed; then exports its library. NOTE: the compiler is
    imported first and not timed: importing kiln's runtime imports tvm-ffi, which imports torch
    when installed (about 2 CPU seconds), whatever the model."""
    import kiln
    import kiln.driver  # noqa: F401
    import kiln.relax.frontend.onnx  # noqa: F401

    t0 = time.perf_counter()
    model = kiln.compile(str(work / f"{name}.onnx"))
    seconds = time.perf_counter() - t0
    model.export(work / f"{name}.so")
    print(json.dumps({"model": name, "seconds": seconds}))


def profile_worker(name: str, work: Path) -> None:
    """kiln's per-kernel profile of one model (median of 5 profiled calls), as JSON."""
    import kiln

    model = kiln.load(work / f"{name}.so")
    with np.load(work / f"{name}.npz") as data:
        feed = {k: data[k] for k in data.files}
    model(**feed)
    reports = [model.profile(**feed) for _ in range(5)]
    report = sorted(reports, key=lambda r: r.total_us)[len(reports) // 2]
    print(json.dumps({"text": str(report), "total_us": report.total_us,
                      "rows": [[r.kernel, r.total_us] for r in report.rows]}))  # fmt: skip


# -- parent ----------------------------------------------------------------------------------------
def _run(cmd: list[str], env: dict[str, str], what: str) -> list[dict[str, Any]]:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"{what} failed ({proc.returncode})")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def _self(*args: str) -> list[str]:
    return [sys.executable, __file__, *args]


def prepare(models: list[str], work: Path) -> None:
    """Build each model with torch; write its ONNX file, state dict and inputs."""
    import model_zoo
    import torch

    for name in models:
        module = model_zoo.build(name)
        feeds = model_zoo.inputs(name)
        (work / f"{name}.onnx").write_bytes(model_zoo.export_onnx(module, feeds))
        torch.save(module.state_dict(), work / f"{name}.pt")
        np.savez(work / f"{name}.npz", **feeds)


def compile_times(models: list[str], work: Path) -> dict[str, tuple[float, float]]:
    """model -> (cold, cached) seconds of ``kiln.compile``, each in a fresh process."""
    out = {}
    for name in models:
        env = dict(thread_env("kiln", os.cpu_count() or 1), KILN_CACHE_DIR=str(work / name))
        cmd = _self("--compile", name, "--work", str(work))
        cold = _run(cmd, env, f"compiling {name}")[0]["seconds"]
        cached = _run(cmd, env, f"compiling {name} again")[0]["seconds"]
        out[name] = (cold, cached)
        print(f"# {name}: compile {cold:.2f} s cold, {cached:.2f} s cached", file=sys.stderr)
    return out


def collect(args: argparse.Namespace, models: list[str], work: Path) -> dict[tuple, list[float]]:
    """(model, lib, threads) -> timed samples over all rounds."""
    samples: dict[tuple, list[float]] = {}
    threads = [int(t) for t in args.threads.split(",")]
    for _ in range(args.rounds):
        for n in threads:
            for lib in LIBS:
                cmd = _self("--worker", lib, "--threads", str(n), "--models", ",".join(models))
                cmd += ["--work", str(work), "--repeat", str(args.repeat)]
                cmd += ["--min-seconds", str(args.min_seconds)]
                for row in _run(cmd, worker_env(lib, n), f"the {lib} worker ({n} threads)"):
                    samples.setdefault((row["model"], lib, n), []).extend(row["samples"])
    return samples


def check_outputs(models: list[str], threads: list[int], work: Path) -> dict[str, float]:
    """model -> the largest |difference| of kiln's and torch's outputs from onnxruntime's;
    exits when one is beyond rtol = atol = 2e-3."""
    worst: dict[str, float] = {}
    for name in models:
        for n in threads:
            with np.load(work / f"out-onnxruntime-{n}-{name}.npz") as ref:
                want = [ref[k] for k in ref.files]
            for lib in ("kiln", "torch"):
                with np.load(work / f"out-{lib}-{n}-{name}.npz") as got_file:
                    got = [got_file[k] for k in got_file.files]
                for g, w in zip(got, want, strict=True):
                    if not np.allclose(g, w, rtol=TOL, atol=TOL):
                        diff = float(np.abs(g.astype("float64") - w).max())
                        raise SystemExit(f"{name}: {lib} disagrees with onnxruntime ({diff:.3g})")
                    diff = float(np.abs(g.astype("float64") - w).max()) if w.size else 0.0
                    worst[name] = max(worst.get(name, 0.0), diff)
    return worst


def table(models: list[str], threads: list[int], samples: dict[tuple, list[float]],
          compiled: dict[str, tuple[float, float]], worst: dict[str, float]) -> str:  # fmt: skip
    """The markdown table: median ms per library, kiln's speed ratios, compile times."""
    import model_zoo

    head = "| model | threads | kiln ms | onnxruntime ms | torch ms | kiln/ort | kiln/torch |"
    lines = [head + " compile cold / cached s | max diff |", "|" + "---|" * 9]
    for name in models:
        for n in threads:
            t = {lib: statistics.median(samples[(name, lib, n)]) for lib in LIBS}
            cold, cached = compiled.get(name, (float("nan"), float("nan")))
            cells = [model_zoo.DESCRIPTIONS[name], str(n)]
            cells += [f"{t[lib] * 1e3:.3f}" for lib in LIBS]
            cells += [f"{t['onnxruntime'] / t['kiln']:.2f}x", f"{t['torch'] / t['kiln']:.2f}x"]
            cells += [f"{cold:.1f} / {cached:.2f}" if n == threads[0] else "", f"{worst[name]:.1g}"]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def conv_share(report: dict[str, Any]) -> str:
    """The profile's text, and the share of the call spent in convolution kernels."""
    conv = sum(us for kernel, us in report["rows"] if "conv" in kernel)
    total = report["total_us"]
    return (f"{report['text']}\n\nconvolution kernels: {conv / 1e3:.2f} ms of "
            f"{total / 1e3:.2f} ms ({conv / total:.0%})")  # fmt: skip


def report(args: argparse.Namespace, models: list[str], work: Path) -> str:
    threads = [int(t) for t in args.threads.split(",")]
    load0 = os.getloadavg()[0]
    compiled = compile_times(models, work)
    samples = collect(args, models, work)
    worst = check_outputs(models, threads, work)
    text = table(models, threads, samples, compiled, worst)
    load = f"load average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    parts = [f"{datetime.date.today().isoformat()}, {machine()}; {load}"]
    cmd = "python benchmarks/bench_models.py " + " ".join(sys.argv[1:])
    parts += [f"`{cmd}`", text]
    if args.profile:
        env = thread_env("kiln", threads[0])
        prof = _run(_self("--profile-worker", args.profile, "--work", str(work)), env, "profile")
        parts.append(f"kiln profile of {args.profile}, {threads[0]} thread(s):\n\n```\n"
                     f"{conv_share(prof[0])}\n```")  # fmt: skip
    return "\n\n".join(parts)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(ALL_MODELS), help=",".join(ALL_MODELS))
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--repeat", type=int, default=20, help="timed calls per worker and model")
    p.add_argument("--min-seconds", type=float, default=0.3,
                   help="time each model at least this long per worker and round")  # fmt: skip
    p.add_argument("--rounds", type=int, default=2, help="rounds of all workers")
    p.add_argument("--markdown", type=Path, help="write the table into this markdown file")
    p.add_argument("--profile", metavar="MODEL", help="also print kiln's profile of MODEL")
    p.add_argument("--work", type=Path, help="keep models and libraries here (default: temp)")
    p.add_argument("--worker", choices=LIBS, help=argparse.SUPPRESS)
    p.add_argument("--compile", metavar="MODEL", help=argparse.SUPPRESS)
    p.add_argument("--profile-worker", metavar="MODEL", help=argparse.SUPPRESS)
    args = p.parse_args()
    models = [m for m in args.models.split(",") if m]
    unknown = sorted(set(models) - set(ALL_MODELS))
    if unknown or (args.profile and args.profile not in models):
        raise SystemExit(f"unknown model(s) {unknown or [args.profile]}; have {ALL_MODELS}")
    if args.worker:
        return time_worker(
            args.worker, int(args.threads), models, args.work, args.repeat, args.min_seconds
        )
    if args.compile:
        return compile_worker(args.compile, args.work)
    if args.profile_worker:
        return profile_worker(args.profile_worker, args.work)
    with tempfile.TemporaryDirectory(prefix="bench_models-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        prepare(models, work)
        text = report(args, models, work)
    print(text)
    print(f"# whole run: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    if args.markdown is not None:
        update_readme(args.markdown, text, "bench_models")


if __name__ == "__main__":
    main()
