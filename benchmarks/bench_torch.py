"""torch.compile(backend="kiln") against torch.compile's default (Inductor) and eager PyTorch.

    python benchmarks/bench_torch.py [--models resnet50,bert] [--threads 1,2] [--repeat 20]
                                     [--min-seconds 0.3] [--rounds 2] [--smoke]
                                     [--markdown benchmarks/README.md] [--work DIR]

Models (seeded random weights, batch 1, inference under ``torch.no_grad()``):

- ``resnet50``: torchvision's ResNet-50 on a 224x224 image;
- ``bert``: a BERT-base-sized encoder (transformers ``BertModel``: 12 layers, hidden 768, 12
  heads) on 128 tokens with an all-ones attention mask, returning its last hidden state.

``--smoke`` swaps in tiny configs (ResNet with one bottleneck per stage on 32x32, BERT with
hidden 32 and 2 layers, sequence 16) to check the script end to end in a few minutes.

One worker process per (library, thread count), started with every thread-count variable set
before anything is imported (`bench_models.worker_env`, `bench_ops.thread_env`) and
``torch.set_num_threads``: ``kiln`` (``torch.compile(model, backend="kiln")``), ``inductor``
(``torch.compile(model)``) and ``eager``. A worker builds each model, times its first call
(Dynamo tracing and the backend's compile: kiln's model cache, in the run's work folder, is
cold in the first round and warm after; Inductor keeps its own cache), then 3 warm-up calls and
``--repeat`` timed calls, more until they add up to ``--min-seconds``, and saves the output.
The parent runs ``--rounds`` rounds of all workers (a change in machine load hits every library
alike) and reports medians of all timed calls; kiln's and Inductor's outputs must match eager's
within rtol = atol = 2e-3. Ratios are the other library's time over kiln's (above 1: kiln is
faster). A model that fails in a library shows the one-line reason in that cell; the run goes
on. ``--markdown`` writes the report between the ``bench_torch`` markers of that file.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # dynamic_models imports tests
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_models import worker_env  # noqa: E402
from bench_ops import machine, update_readme  # noqa: E402

LIBS = ("kiln", "inductor", "eager")
MODELS = ("resnet50", "bert")
TOL = 2e-3
DESCRIPTIONS = {
    "resnet50": "ResNet-50 (torchvision), 224x224",
    "bert": "BERT-base encoder (12 layers, 768, 12 heads), seq 128 + mask",
}
SMOKE = {"resnet50": "ResNet, 1 bottleneck per stage, 32x32", "bert": "BERT, 2 layers, 32, seq 16"}


# -- models ----------------------------------------------------------------------------------------
def _resnet(smoke: bool) -> tuple[Any, tuple[Any, ...]]:
    import torch
    from torchvision.models import resnet

    if smoke:
        net = resnet.ResNet(resnet.Bottleneck, [1, 1, 1, 1], num_classes=10)
        return net, (torch.randn(1, 3, 32, 32),)
    return resnet.resnet50(weights=None), (torch.randn(1, 3, 224, 224),)


def _last_hidden(model: Any) -> Any:
    """``model`` (a transformers encoder) called with ids and a mask, returning one tensor."""
    import torch

    class LastHidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, ids: Any, mask: Any) -> Any:
            return self.model(ids, attention_mask=mask).last_hidden_state

    return LastHidden()


def _bert(smoke: bool) -> tuple[Any, tuple[Any, ...]]:
    import torch
    import transformers

    size = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                intermediate_size=64, vocab_size=100) if smoke else {}  # fmt: skip
    seq = 16 if smoke else 128
    config = transformers.BertConfig(**size)
    model = _last_hidden(transformers.BertModel(config))
    ids = torch.randint(0, config.vocab_size, (1, seq), generator=torch.Generator().manual_seed(0))
    return model, (ids, torch.ones(1, seq, dtype=torch.int64))


def build(name: str, smoke: bool) -> tuple[Any, tuple[Any, ...]]:
    """Model ``name`` in eval mode with seeded weights, and its inputs."""
    import torch
    from dynamic_models import _torchvision_schemas

    _torchvision_schemas()  # torchvision (transformers imports it too) next to the CPU torch
    torch.manual_seed(0)
    net, args = (_resnet if name == "resnet50" else _bert)(smoke)
    return net.eval(), args


# -- workers ---------------------------------------------------------------------------------------
def _one_line(e: BaseException) -> str:
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0] if lines else ''}"[:200]


def _time(fn: Any, inputs: tuple[Any, ...], repeat: int, min_seconds: float) -> list[float]:
    """Seconds of ``repeat`` timed calls after 3 warm-up ones, more until ``min_seconds``."""
    for _ in range(3):
        fn(*inputs)
    samples: list[float] = []
    target = repeat
    while len(samples) < target:
        t0 = time.perf_counter()
        fn(*inputs)
        samples.append(time.perf_counter() - t0)
        if len(samples) == target and sum(samples) < min_seconds:
            target += math.ceil((min_seconds - sum(samples)) / statistics.median(samples))
    return samples


def _compiled(lib: str, net: Any) -> Any:
    import torch

    if lib == "kiln":
        return torch.compile(net, backend="kiln")
    if lib == "inductor":
        return torch.compile(net)
    return net


def time_worker(args: argparse.Namespace, models: list[str]) -> None:
    """Time library ``args.worker`` on every model: one JSON line per model (samples, first
    call seconds, or the error); outputs saved in the work folder."""
    import torch

    threads = int(args.threads)
    torch.set_num_threads(threads)
    for name in models:
        row: dict[str, Any] = {"model": name, "lib": args.worker, "threads": threads}
        try:
            net, inputs = build(name, args.smoke)
            fn = _compiled(args.worker, net)
            with torch.no_grad():
                t0 = time.perf_counter()
                out = fn(*inputs)
                row["first"] = time.perf_counter() - t0
                np.save(args.work / f"out-{args.worker}-{threads}-{name}.npy", out.numpy())
                row["samples"] = _time(fn, inputs, args.repeat, args.min_seconds)
        except Exception as e:
            row["error"] = _one_line(e)
        print(json.dumps(row), flush=True)


def _run_worker(args: argparse.Namespace, lib: str, threads: int, work: Path) -> list[dict]:
    cmd = [sys.executable, __file__, "--worker", lib, "--threads", str(threads),
           "--models", args.models, "--work", str(work), "--repeat", str(args.repeat),
           "--min-seconds", str(args.min_seconds)]  # fmt: skip
    cmd += ["--smoke"] if args.smoke else []
    env = worker_env(lib, threads)
    env["KILN_CACHE_DIR"] = str(work / "kiln-cache")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    rows = [json.loads(ln) for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 and len(rows) < len(args.models.split(",")):
        tail = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        seen = {r["model"] for r in rows}
        rows += [{"model": m, "lib": lib, "threads": threads, "error": f"crashed: {tail[0]}"[:200]}
                 for m in args.models.split(",") if m not in seen]  # fmt: skip
    return rows


# -- the report ------------------------------------------------------------------------------------
Key = tuple[str, str, int]
"""(model, library, threads)."""


def collect(args: argparse.Namespace, work: Path) -> tuple[dict[Key, list[float]], dict, dict]:
    """Every round's samples, first-call seconds (per round) and errors, by (model, lib, n)."""
    samples: dict[Key, list[float]] = {}
    first: dict[Key, list[float]] = {}
    errors: dict[Key, str] = {}
    threads = [int(t) for t in args.threads.split(",")]
    for r in range(args.rounds):
        for lib in LIBS:
            for n in threads:
                for row in _run_worker(args, lib, n, work):
                    key = (row["model"], lib, n)
                    if "error" in row:
                        errors.setdefault(key, row["error"])
                        continue
                    samples.setdefault(key, []).extend(row["samples"])
                    first.setdefault(key, []).append(row["first"])
                print(f"# round {r + 1}: {lib} on {n} thread(s) done", file=sys.stderr)
    return samples, first, errors


def check(models: list[str], threads: list[int], work: Path, errors: dict[Key, str]) -> dict:
    """Max |difference| to eager's output per (model, lib, n); a mismatch becomes an error."""
    diffs: dict[Key, float] = {}
    for name in models:
        for n in threads:
            ref = work / f"out-eager-{n}-{name}.npy"
            for lib in ("kiln", "inductor"):
                out = work / f"out-{lib}-{n}-{name}.npy"
                if (name, lib, n) in errors or not (ref.exists() and out.exists()):
                    continue
                got, want = np.load(out), np.load(ref)
                diffs[(name, lib, n)] = float(np.max(np.abs(got - want))) if got.size else 0.0
                if got.shape != want.shape or not np.allclose(got, want, rtol=TOL, atol=TOL):
                    worst = diffs[(name, lib, n)]
                    errors[(name, lib, n)] = f"output differs from eager (max {worst:.2g})"
    return diffs


def _cell(samples: dict, errors: dict, key: Key) -> str:
    if key in errors:
        return f"failed: {errors[key]}".replace("|", "/")
    return f"{statistics.median(samples[key]) * 1e3:.2f}" if key in samples else "-"


def _ratio(samples: dict, errors: dict, other: Key, kiln: Key) -> str:
    if other in errors or kiln in errors or other not in samples or kiln not in samples:
        return "-"
    return f"{statistics.median(samples[other]) / statistics.median(samples[kiln]):.2f}x"


def _firsts(first: dict, name: str, n: int) -> str:
    def fmt(lib: str) -> str:
        times = first.get((name, lib, n))
        return "-" if not times else " / ".join(f"{t:.1f}" for t in times)

    return f"{fmt('kiln')} ; {fmt('inductor')}"


def table(args: argparse.Namespace, models: list[str], results: tuple, diffs: dict) -> str:
    samples, first, errors = results
    desc = SMOKE if args.smoke else DESCRIPTIONS
    head = ("| model | threads | kiln ms | inductor ms | eager ms | kiln/inductor | "
            "kiln/eager | first call s, kiln ; inductor (per round) | max diff kiln, "
            "inductor |")  # fmt: skip
    lines = [head, "|" + "---|" * 9]
    for name in models:
        for n in [int(t) for t in args.threads.split(",")]:
            k, i, e = (name, "kiln", n), (name, "inductor", n), (name, "eager", n)
            diff = " / ".join(f"{diffs[x]:.0e}" if x in diffs else "-" for x in (k, i))
            cells = [desc[name], str(n), _cell(samples, errors, k), _cell(samples, errors, i),
                     _cell(samples, errors, e), _ratio(samples, errors, i, k),
                     _ratio(samples, errors, e, k), _firsts(first, name, n), diff]  # fmt: skip
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report(args: argparse.Namespace, models: list[str], work: Path) -> str:
    load0 = os.getloadavg()[0]
    results = collect(args, work)
    diffs = check(models, [int(t) for t in args.threads.split(",")], work, results[2])
    load = f"load average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    cmd = "python benchmarks/bench_torch.py " + " ".join(sys.argv[1:])
    text = table(args, models, results, diffs)
    return "\n\n".join([f"{datetime.date.today().isoformat()}, {machine()}; {load}", f"`{cmd}`",
                        text])  # fmt: skip


def _parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated: resnet50,bert")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--repeat", type=int, default=20, help="timed calls per worker and model")
    p.add_argument("--min-seconds", type=float, default=0.3,
                   help="time each model at least this long per worker and round")  # fmt: skip
    p.add_argument("--rounds", type=int, default=2, help="rounds of all workers")
    p.add_argument("--smoke", action="store_true", help="tiny configs: check the script runs")
    p.add_argument("--markdown", type=Path, help="write the table into this markdown file")
    p.add_argument("--work", type=Path, help="keep outputs and kiln's cache here (default: temp)")
    p.add_argument("--worker", choices=LIBS, help=argparse.SUPPRESS)
    return p.parse_args()


def main() -> None:
    args = _parse()
    models = [m for m in args.models.split(",") if m]
    unknown = sorted(set(models) - set(MODELS))
    if unknown:
        raise SystemExit(f"unknown model(s) {unknown}; have {list(MODELS)}")
    if args.worker:
        return time_worker(args, models)
    with tempfile.TemporaryDirectory(prefix="bench_torch-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        text = report(args, models, work)
    print(text)
    print(f"# whole run: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    if args.markdown is not None:
        update_readme(args.markdown, text, "bench_torch")


if __name__ == "__main__":
    main()
