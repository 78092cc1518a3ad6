"""Compile time of the real architectures: cold (empty cache) and from kiln's model cache.

    python benchmarks/bench_compile.py [--models resnet50,densenet121] [--rounds 3]
                                       [--markdown benchmarks/README.md]

The models are those of ``bench_models.py --set real`` (`real_models.MODELS`, exported once
into `real_models.cache_dir`). Each measurement is one fresh process (``--worker``) that imports
kiln, then times ``kiln.compile(path)``: wall seconds, and CPU seconds of the process plus those
of the C compiler processes it ran. A round is a *cold* compile, with ``KILN_CACHE_DIR`` a new
empty folder (nothing of kiln's cache: not the runtime's C, no kernel objects, no model), then
a *cached* compile in another fresh process with the same folder (a model cache hit). The table
gives medians over the rounds, and the process's whole wall time (Python start and the import
of kiln included) of the cached run, and a *twin* compile: the same network with every weight
scaled by 1.01 (another model, every kernel shared: what the kernel cache saves), same folder.
Rounds run one after another, one process at a time.
``--markdown`` writes the table into that file between the ``bench_compile`` markers;
``--kiln-root DIR`` times the kiln of another checkout (a baseline: ``git archive`` of a commit).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

ROOT = Path(__file__).resolve().parent.parent


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def worker(path: str, root: Path) -> None:
    """Import the kiln of checkout ``root``, compile ``path`` once, print the times as one
    JSON line."""
    sys.path.insert(0, str(root))
    start = time.perf_counter()
    import kiln
    import kiln.driver  # noqa: F401 - the compiler itself, imported lazily by kiln.compile

    if not Path(kiln.__file__).resolve().is_relative_to(root):
        raise RuntimeError(f"kiln came from {kiln.__file__}, not from {root}")

    imported = time.perf_counter()
    cpu0, child0 = time.process_time(), _children_cpu()
    kiln.compile(path)
    done = time.perf_counter()
    cpu = time.process_time() - cpu0
    child = _children_cpu() - child0
    result = {"import_s": imported - start, "wall_s": done - imported, "cpu_s": cpu + child,
              "cc_cpu_s": child}  # fmt: skip
    print(json.dumps(result))


def measure(path: Path, cache: Path, root: Path = ROOT) -> dict[str, float]:
    """One worker process compiling ``path`` with ``cache`` as kiln's cache folder, and the
    kiln of checkout ``root``."""
    env = {**os.environ, "KILN_CACHE_DIR": str(cache)}
    env.pop("KILN_DEBUG", None)
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, __file__, "--worker", str(path), "--kiln-root", str(root)],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if out.returncode != 0:
        raise RuntimeError(f"compiling {path} failed:\n{out.stderr[-4000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["process_s"] = time.perf_counter() - start
    return result


def twin(path: Path, folder: Path) -> Path:
    """``path``'s model with every float initializer scaled by 1.01: another model (another
    model-cache key) with the same kernels, as a fine-tuned copy of a network is."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    for init in model.graph.initializer:
        arr = numpy_helper.to_array(init)
        if arr.dtype.kind == "f":
            init.CopyFrom(numpy_helper.from_array((arr * 1.01).astype(arr.dtype), init.name))
    out = folder / f"twin-{path.name}"
    onnx.save(model, str(out))
    return out


def bench(name: str, rounds: int, root: Path = ROOT) -> dict[str, float]:
    """Median times of ``rounds`` cold, cached and twin compiles of model ``name`` by the kiln
    of checkout ``root``."""
    import real_models

    path = real_models.export(name)
    cold, cached, second = [], [], []
    with tempfile.TemporaryDirectory(prefix="kiln-bench-twin-") as folder:
        other = twin(path, Path(folder))
        for _ in range(rounds):
            with tempfile.TemporaryDirectory(prefix="kiln-bench-compile-") as tmp:
                cold.append(measure(path, Path(tmp), root))
                cached.append(measure(path, Path(tmp), root))
                second.append(measure(other, Path(tmp), root))
    med = statistics.median
    return {
        "twin_wall": med(r["wall_s"] for r in second),
        "cold_wall": med(r["wall_s"] for r in cold),
        "cold_cpu": med(r["cpu_s"] for r in cold),
        "cold_cc_cpu": med(r["cc_cpu_s"] for r in cold),
        "cached_wall": med(r["wall_s"] for r in cached),
        "cached_process": med(r["process_s"] for r in cached),
        "import": med(r["import_s"] for r in cold + cached),
    }


def table(results: dict[str, dict[str, float]], rounds: int) -> str:
    import real_models

    lines = [
        f"Medians of {rounds} rounds, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"{time.strftime('%Y-%m-%d')}. Seconds. cold: `kiln.compile` with an empty "
        "`KILN_CACHE_DIR`; cpu: the process and its C compilers; cached: a second process, "
        "same cache (its whole run, Python start and `import kiln` included, last); twin: then "
        "the same network with other weights (a second model sharing every kernel), same cache.",
        "",
        "| model | cold wall | cold cpu (of it cc) | cached | cached process | twin (of cold) "
        "| import kiln |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in results.items():
        lines.append(
            f"| {real_models.DESCRIPTIONS[name]} | {r['cold_wall']:.1f} | {r['cold_cpu']:.1f} "
            f"({r['cold_cc_cpu']:.1f}) | {r['cached_wall']:.3f} | {r['cached_process']:.2f} "
            f"| {r['twin_wall']:.1f} ({r['twin_wall'] / r['cold_wall']:.0%}) | {r['import']:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", help="comma-separated (default: the whole real set)")
    p.add_argument("--rounds", type=int, default=3, help="cold + cached compiles per model")
    p.add_argument("--markdown", type=Path, help="write the table into this markdown file")
    p.add_argument(
        "--kiln-root",
        type=Path,
        default=ROOT,
        help="the checkout whose kiln compiles (default: this one), to compare",
    )
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:  # NOTE: before importing real_models, which puts this checkout on the path
        worker(args.worker, args.kiln_root.resolve())
        return
    import real_models
    from bench_ops import update_readme

    names = [n for n in (args.models or ",".join(real_models.MODELS)).split(",") if n]
    unknown = [n for n in names if n not in real_models.MODELS]
    if unknown:
        p.error(f"unknown models {unknown}; known: {', '.join(real_models.MODELS)}")
    results = {}
    for name in names:
        results[name] = bench(name, args.rounds, args.kiln_root)
        r = results[name]
        print(
            f"{name}: cold {r['cold_wall']:.1f} s wall, {r['cold_cpu']:.1f} s cpu; "
            f"cached {r['cached_wall']:.3f} s ({r['cached_process']:.2f} s process); "
            f"twin {r['twin_wall']:.1f} s",
            flush=True,
        )
    text = table(results, args.rounds)
    print(text)
    if args.markdown is not None:
        update_readme(args.markdown, text, "bench_compile")


if __name__ == "__main__":
    main()
