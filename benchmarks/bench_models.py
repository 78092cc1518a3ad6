"""Whole models: kiln (compiled mode) against onnxruntime, OpenVINO and torch eager, in one run.

    python benchmarks/bench_models.py [--set small|real] [--models NAME,...] [--threads 1,2]
                                      [--repeat 20] [--min-seconds 0.3] [--rounds 2]
                                      [--cache DIR] [--markdown benchmarks/README.md]
                                      [--profile MODEL] [--work DIR]

Model sets (``--set``; ``--models`` picks some of them):

- **small** (the default, `model_zoo.py`): an MLP at batch 1 and 64, a small CNN, ResNet-18 at
  224x224, a transformer encoder layer at 128x256 and a decoder-only transformer at sequence 64.
  Each is built with torch from a fixed seed and exported to ONNX in the run's work folder; the
  torch worker loads the saved state dict.
- **real** (`real_models.py`): 16 real architectures from library configs with seeded random
  weights, batch 1: torchvision's ResNet-50, MobileNetV2, MobileNetV3-Small, EfficientNet-B0,
  SqueezeNet 1.1 and DenseNet-121 and timm's DeiT-Tiny, ConvNeXt-T, Swin-T and MobileViT-XXS at
  224x224; transformers' BERT-base (4 layers), DistilBERT, GPT-2 (4 layers), a Llama-style
  decoder with GQA (4 layers, hidden 512) and the T5-small encoder at sequence 128, and the
  Whisper-tiny encoder on 80x1500 features. Each is exported once with the TorchScript exporter
  into a cache outside the checkout (``--cache``, else ``$KILN_BENCH_CACHE``, else
  ``~/.cache/kiln-bench/real``), in a process of its own; the torch worker rebuilds the weights
  from the seed.

Either way the libraries run the same weights on the same inputs. Steps, each in processes of
their own:

- **compile**: per model, ``kiln.compile(model.onnx)`` in a fresh process with an empty
  ``KILN_CACHE_DIR`` (the cold compile time: import, passes, C compiler, writing the model
  cache), then again in a second fresh process with the same cache (the cached compile time: a
  load from kiln's model cache); the second exports the library the kiln worker loads. Both
  exclude importing kiln itself (see `compile_worker`).
- **time**: one worker process per (library, thread count), started with every thread-count
  variable set (`bench_ops.thread_env`; ``OPENBLAS_CORETYPE`` / ``OPENBLAS_L2_SIZE`` unset in the
  onnxruntime, OpenVINO and torch workers only), times every model with
  `kiln.cli.bench_worker.time_calls` (the timing loop of ``kiln bench``): 3 warm-up calls, then
  ``--repeat`` timed calls, and more until they add up to ``--min-seconds`` (20 calls of a
  0.2 ms model span 4 ms, one noisy moment of a shared machine; 0.3 s spans many). OpenVINO runs
  in f32 (``INFERENCE_PRECISION_HINT``) with the latency hint and the worker's thread count. The
  parent runs ``--rounds`` rounds of all workers, so a change in machine load hits every library
  alike, and reports the median of all timed calls.
- **check**: each worker saves its outputs; kiln's, OpenVINO's and torch's must match
  onnxruntime's (torch's where onnxruntime failed) within rtol = atol = 2e-3.

A model that fails in one library (its export, kiln's compile, a library's load or call, a
crash, or outputs that do not match) is shown as failed in that library's cell with a one-line
reason, and the run goes on. Speed ratios are the other library's time over kiln's (above 1:
kiln is faster); "best f32 peer" is the faster of onnxruntime and OpenVINO. ``--profile MODEL``
also prints kiln's per-kernel profile of that model (what ``kiln profile`` prints) and the share
of its time spent in convolution kernels. ``--markdown`` writes the report between the
``bench_models`` markers of that file (``bench_models_real`` for the real set).
"""

from __future__ import annotations

import argparse
import datetime
import importlib
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

LIBS = ("kiln", "onnxruntime", "openvino", "torch")
PEERS = ("onnxruntime", "openvino")
"""The f32 peers: the table's last ratio is kiln's against the faster of them."""
SHORT = {"onnxruntime": "ort", "openvino": "ov", "torch": "torch"}
ALL_MODELS = ("mlp-b1", "mlp-b64", "cnn", "resnet18", "encoder", "decoder")
SETS = ("small", "real")
TOL = 2e-3


def set_models(model_set: str) -> tuple[str, ...]:
    """The model names of ``--set``: `model_zoo`'s (``small``) or `real_models`'s (``real``)."""
    if model_set == "small":
        return ALL_MODELS
    import real_models

    return tuple(real_models.MODELS)


def _zoo(model_set: str) -> Any:
    """The module that builds the set's models (``build``) and describes them (``DESCRIPTIONS``)."""
    return importlib.import_module("model_zoo" if model_set == "small" else "real_models")


def _one_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}"[:200]


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
    if hasattr(value, "to_tuple"):  # OpenVINO's OVDict
        value = value.to_tuple()
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _outputs(v)]
    if hasattr(value, "detach"):
        return [value.detach().numpy()]
    return [value.numpy() if hasattr(value, "numpy") else np.asarray(value)]


def _load(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


def _torch_call(model_set: str, work: Path, name: str, feed: dict[str, np.ndarray],
                threads: int) -> Any:  # fmt: skip
    import torch

    torch.set_num_threads(threads)
    module = _zoo(model_set).build(name)
    if (work / f"{name}.pt").exists():  # the small set saves its state dicts
        module.load_state_dict(torch.load(work / f"{name}.pt"))
    args = [torch.from_numpy(v) for v in feed.values()]

    def call() -> Any:
        with torch.inference_mode():
            return module(*args)

    return call


def _openvino(path: str, feed: dict[str, np.ndarray], threads: int) -> Any:
    """OpenVINO's CPU plugin on the ONNX file, in f32, with ``threads`` threads."""
    import openvino as ov

    config = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": str(threads),
              "PERFORMANCE_HINT": "LATENCY"}  # fmt: skip
    compiled = ov.Core().compile_model(path, "CPU", config)
    request = compiled.create_infer_request()
    named = {p.get_any_name(): feed[p.get_any_name()] for p in compiled.inputs}
    return lambda: request.infer(named, share_inputs=True)


def _call(args: argparse.Namespace, name: str, feed: dict[str, np.ndarray]) -> Any:
    from kiln.cli.bench_worker import RUNTIMES

    lib, threads = args.worker, int(args.threads)
    if lib == "torch":
        return _torch_call(args.set, args.work, name, feed, threads)
    path = args.work / (f"{name}.so" if lib == "kiln" else f"{name}.onnx")
    runtime = _openvino if lib == "openvino" else RUNTIMES[lib]
    return runtime(str(path), feed, threads)


def time_worker(args: argparse.Namespace, models: list[str]) -> None:
    """Time library ``args.worker`` on every model: one JSON line per model, with its samples
    or the error; outputs saved beside the inputs."""
    from kiln.cli.bench_worker import time_calls

    for name in models:
        row: dict[str, Any] = {"model": name, "lib": args.worker, "threads": int(args.threads)}
        try:
            call = _call(args, name, _load(args.work / f"{name}.npz"))
            out = args.work / f"out-{args.worker}-{args.threads}-{name}.npz"
            np.savez(out, *_outputs(call()))
            samples = time_calls(call, args.repeat)
            short = args.min_seconds - sum(samples)
            if short > 0:
                runs = math.ceil(short / statistics.median(samples))
                samples += time_calls(call, runs, warmup=0)
            row["samples"] = samples
        except Exception as e:
            row["error"] = _one_line(e)
        print(json.dumps(row), flush=True)


def compile_worker(models: list[str], work: Path) -> None:
    """``kiln.compile`` of each model, timed; then exports its library. NOTE: the compiler is
    imported first and not timed: importing kiln's runtime imports tvm-ffi, which imports torch
    when installed (about 2 CPU seconds), whatever the model."""
    import kiln
    import kiln.driver  # noqa: F401
    import kiln.relax.frontend.onnx  # noqa: F401

    for name in models:
        row: dict[str, Any] = {"model": name}
        try:
            t0 = time.perf_counter()
            model = kiln.compile(str(work / f"{name}.onnx"))
            row["seconds"] = time.perf_counter() - t0
            model.export(work / f"{name}.so")
        except Exception as e:
            row["error"] = _one_line(e)
        print(json.dumps(row), flush=True)


def export_worker(models: list[str], work: Path, cache: Path | None) -> None:
    """`real_models.export` of each model (once: it keeps a cache), linked into ``work``."""
    import real_models

    for name in models:
        row: dict[str, Any] = {"model": name}
        try:
            onnx_path = real_models.export(name, cache)
            for src in (onnx_path, onnx_path.with_suffix(".npz")):
                (work / src.name).unlink(missing_ok=True)
                (work / src.name).symlink_to(src)
        except Exception as e:
            row["error"] = _one_line(e)
        print(json.dumps(row), flush=True)


def profile_worker(name: str, work: Path) -> None:
    """kiln's per-kernel profile of one model (median of 5 profiled calls), as JSON."""
    import kiln

    model = kiln.load(work / f"{name}.so")
    feed = _load(work / f"{name}.npz")
    model(**feed)
    reports = [model.profile(**feed) for _ in range(5)]
    report = sorted(reports, key=lambda r: r.total_us)[len(reports) // 2]
    print(json.dumps({"text": str(report), "total_us": report.total_us,
                      "rows": [[r.kernel, r.total_us] for r in report.rows]}))  # fmt: skip


# -- parent ----------------------------------------------------------------------------------------
Failures = dict[tuple[str, str], str]
"""(model, library or "export") -> the one-line reason it failed there."""


def _run(cmd: list[str], env: dict[str, str], what: str) -> list[dict[str, Any]]:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"{what} failed ({proc.returncode})")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def _rows(cmd: list[str], models: list[str], env: dict[str, str], what: str) -> list[dict]:
    """The JSON lines of a worker over ``models`` (passed as ``--models``), one per model. A
    worker that dies (a crash inside a library) is started again after the model it was on,
    which gets an error row with the last line it wrote to stderr."""
    rows: list[dict[str, Any]] = []
    pending = list(models)
    while pending:
        cmd_now = [*cmd, "--models", ",".join(pending)]
        proc = subprocess.run(cmd_now, env=env, capture_output=True, text=True)
        rows += [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        done = {row["model"] for row in rows}
        pending = [m for m in pending if m not in done]
        if pending:
            tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
            error = f"{what} exited with {proc.returncode}: {tail[0]}"
            rows.append({"model": pending.pop(0), "error": error[:200]})
    return rows


def _note(failed: Failures, name: str, lib: str, reason: str) -> None:
    failed[(name, lib)] = reason
    print(f"# {name}: {lib} failed: {reason}", file=sys.stderr)


def _self(*args: str) -> list[str]:
    return [sys.executable, __file__, *args]


def prepare(args: argparse.Namespace, models: list[str], work: Path, failed: Failures) -> None:
    """Write each model's ONNX file and inputs into ``work``: the small set built here (with
    its state dicts), the real set exported into its cache by a worker and linked."""
    if args.set == "real":
        cmd = _self("--worker", "export", "--set", "real", "--work", str(work))
        cmd += ["--cache", str(args.cache)] if args.cache else []
        env = worker_env("export", os.cpu_count() or 1)
        for row in _rows(cmd, models, env, "the export worker"):
            if "error" in row:
                _note(failed, row["model"], "export", row["error"])
        return
    import model_zoo
    import torch

    for name in models:
        module = model_zoo.build(name)
        feeds = model_zoo.inputs(name)
        (work / f"{name}.onnx").write_bytes(model_zoo.export_onnx(module, feeds))
        torch.save(module.state_dict(), work / f"{name}.pt")
        np.savez(work / f"{name}.npz", **feeds)


def compile_times(args: argparse.Namespace, models: list[str], work: Path,
                  failed: Failures) -> dict[str, tuple]:  # fmt: skip
    """model -> (cold, cached) seconds of ``kiln.compile``, each in a fresh process."""
    out = {}
    for name in models:
        env = dict(thread_env("kiln", os.cpu_count() or 1), KILN_CACHE_DIR=str(work / name))
        cmd = _self("--worker", "compile", "--set", args.set, "--work", str(work))
        runs = [_rows(cmd, [name], env, f"compiling {name}")[0]]
        if "error" not in runs[0]:
            runs.append(_rows(cmd, [name], env, f"compiling {name} again")[0])
        if "error" in runs[-1]:
            _note(failed, name, "kiln", f"compile: {runs[-1]['error']}")
            continue
        out[name] = (runs[0]["seconds"], runs[1]["seconds"])
        print(f"# {name}: compile {out[name][0]:.2f} s cold, {out[name][1]:.2f} s cached",
              file=sys.stderr)  # fmt: skip
    return out


def collect(args: argparse.Namespace, models: list[str], work: Path,
            failed: Failures) -> dict[tuple, list[float]]:  # fmt: skip
    """(model, lib, threads) -> timed samples over all rounds."""
    samples: dict[tuple, list[float]] = {}
    for _ in range(args.rounds):
        for n in [int(t) for t in args.threads.split(",")]:
            for lib in LIBS:
                todo = [m for m in models if (m, lib) not in failed]
                cmd = _self("--worker", lib, "--threads", str(n), "--set", args.set)
                cmd += ["--work", str(work), "--repeat", str(args.repeat)]
                cmd += ["--min-seconds", str(args.min_seconds)]
                for row in _rows(cmd, todo, worker_env(lib, n), f"the {lib} worker ({n} threads)"):
                    if "error" in row:
                        _note(failed, row["model"], lib, row["error"])
                    else:
                        samples.setdefault((row["model"], lib, n), []).extend(row["samples"])
    return samples


def _compare(got: list[np.ndarray], want: list[np.ndarray]) -> tuple[str | None, float]:
    """(what is wrong or None, the largest |difference|)."""
    if [g.shape for g in got] != [w.shape for w in want]:
        return f"output shapes {[g.shape for g in got]}, not {[w.shape for w in want]}", math.nan
    diff = max((float(np.abs(g.astype("float64") - w).max()) for g, w in zip(got, want) if w.size),
               default=0.0)  # fmt: skip
    if all(np.allclose(g, w, rtol=TOL, atol=TOL) for g, w in zip(got, want, strict=True)):
        return None, diff
    return f"max |diff| {diff:.3g}", diff


def check_outputs(models: list[str], threads: list[int], work: Path,
                  failed: Failures) -> dict[str, float]:  # fmt: skip
    """model -> the largest |difference| of the other libraries' outputs from onnxruntime's
    (torch's where onnxruntime failed); one beyond rtol = atol = 2e-3 fails that library."""
    worst: dict[str, float] = {}
    for name in models:
        ref = next((lib for lib in ("onnxruntime", "torch") if (name, lib) not in failed), None)
        for n in threads if ref else []:
            want = list(_load(work / f"out-{ref}-{n}-{name}.npz").values())
            for lib in LIBS:
                if lib == ref or (name, lib) in failed:
                    continue
                got = list(_load(work / f"out-{lib}-{n}-{name}.npz").values())
                problem, diff = _compare(got, want)
                if problem:
                    _note(failed, name, lib, f"outputs differ from {ref}'s: {problem}")
                else:
                    worst[name] = max(worst.get(name, 0.0), diff)
    return worst


def _failed(reason: str) -> str:
    return "failed: " + reason.replace("|", "\\|")[:160]


def _ratios(t: dict[str, float]) -> list[str]:
    """kiln's speed against each other library and against the best f32 peer."""
    if "kiln" not in t:
        return ["-"] * len(LIBS)
    cells = [f"{t[lib] / t['kiln']:.2f}x" if lib in t else "-" for lib in LIBS[1:]]
    peers = [p for p in PEERS if p in t]
    best = min(peers, key=lambda p: t[p]) if peers else None
    return cells + [f"{t[best] / t['kiln']:.2f}x ({SHORT[best]})" if best else "-"]


def _cells(name: str, n: int, samples: dict[tuple, list[float]], failed: Failures) -> list[str]:
    """One row's times and ratios, or the failures' reasons."""
    if (name, "export") in failed:
        return [_failed("export: " + failed[(name, "export")])] + [""] * (2 * len(LIBS) - 1)
    t = {lib: statistics.median(samples[(name, lib, n)]) for lib in LIBS
         if (name, lib) not in failed and (name, lib, n) in samples}  # fmt: skip
    cells = [f"{t[lib] * 1e3:.3f}" if lib in t else _failed(failed.get((name, lib), "no samples"))
             for lib in LIBS]  # fmt: skip
    return cells + _ratios(t)


def table(model_set: str, models: list[str], threads: list[int],
          samples: dict[tuple, list[float]], compiled: dict[str, tuple[float, float]],
          worst: dict[str, float], failed: Failures) -> str:  # fmt: skip
    """The markdown table: median ms per library, kiln's speed ratios, compile times."""
    descriptions = _zoo(model_set).DESCRIPTIONS
    head = ["model", "threads", *(f"{lib} ms" for lib in LIBS)]
    head += [f"kiln/{SHORT[lib]}" for lib in LIBS[1:]] + ["kiln/best f32 peer"]
    head += ["compile cold / cached s", "max diff"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in models:
        for n in threads:
            cells = [descriptions[name], str(n), *_cells(name, n, samples, failed)]
            if n == threads[0] and name in compiled:
                cells.append("{:.1f} / {:.2f}".format(*compiled[name]))
            else:
                cells.append("" if n != threads[0] else "-")
            cells.append(f"{worst[name]:.1g}" if name in worst else "-")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def conv_share(report: dict[str, Any]) -> str:
    """The profile's text, and the share of the call spent in convolution kernels."""
    conv = sum(us for kernel, us in report["rows"] if "conv" in kernel)
    total = report["total_us"]
    return (f"{report['text']}\n\nconvolution kernels: {conv / 1e3:.2f} ms of "
            f"{total / 1e3:.2f} ms ({conv / total:.0%})")  # fmt: skip


def _profile(args: argparse.Namespace, work: Path, threads: int, failed: Failures) -> str:
    if (args.profile, "kiln") in failed or (args.profile, "export") in failed:
        return f"no kiln profile of {args.profile}: it failed"
    env = thread_env("kiln", threads)
    prof = _run(_self("--profile-worker", args.profile, "--work", str(work)), env, "profile")
    head = f"kiln profile of {args.profile}, {threads} thread(s)"
    return f"{head}:\n\n```\n{conv_share(prof[0])}\n```"


def report(args: argparse.Namespace, models: list[str], work: Path, failed: Failures) -> str:
    threads = [int(t) for t in args.threads.split(",")]
    load0 = os.getloadavg()[0]
    ok = [m for m in models if (m, "export") not in failed]
    compiled = compile_times(args, ok, work, failed)
    samples = collect(args, ok, work, failed)
    worst = check_outputs(ok, threads, work, failed)
    text = table(args.set, models, threads, samples, compiled, worst, failed)
    load = f"load average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    parts = [f"{datetime.date.today().isoformat()}, {machine()}; {load}"]
    cmd = "python benchmarks/bench_models.py " + " ".join(sys.argv[1:])
    parts += [f"`{cmd}`", text]
    if args.profile:
        parts.append(_profile(args, work, threads[0], failed))
    return "\n\n".join(parts)


def _parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--set", choices=SETS, default="small", help="the model set (default small)")
    p.add_argument("--models", help="comma-separated names from the set (default: all of it)")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--repeat", type=int, default=20, help="timed calls per worker and model")
    p.add_argument("--min-seconds", type=float, default=0.3,
                   help="time each model at least this long per worker and round")  # fmt: skip
    p.add_argument("--rounds", type=int, default=2, help="rounds of all workers")
    p.add_argument("--cache", type=Path, help="the real set's export cache (see real_models)")
    p.add_argument("--markdown", type=Path, help="write the table into this markdown file")
    p.add_argument("--profile", metavar="MODEL", help="also print kiln's profile of MODEL")
    p.add_argument("--work", type=Path, help="keep models and libraries here (default: temp)")
    p.add_argument("--worker", choices=(*LIBS, "compile", "export"), help=argparse.SUPPRESS)
    p.add_argument("--profile-worker", metavar="MODEL", help=argparse.SUPPRESS)
    return p.parse_args()


def main() -> None:
    args = _parse()
    known = set_models(args.set)
    models = [m for m in (args.models or ",".join(known)).split(",") if m]
    unknown = sorted(set(models) - set(known))
    if unknown or (args.profile and args.profile not in models):
        raise SystemExit(f"unknown model(s) {unknown or [args.profile]}; have {known}")
    if args.worker == "compile":
        return compile_worker(models, args.work)
    if args.worker == "export":
        return export_worker(models, args.work, args.cache)
    if args.worker:
        return time_worker(args, models)
    if args.profile_worker:
        return profile_worker(args.profile_worker, args.work)
    with tempfile.TemporaryDirectory(prefix="bench_models-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        failed: Failures = {}
        prepare(args, models, work, failed)
        text = report(args, models, work, failed)
    print(text)
    print(f"# whole run: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    if args.markdown is not None:
        section = "bench_models" if args.set == "small" else "bench_models_real"
        update_readme(args.markdown, text, section)


if __name__ == "__main__":
    main()
