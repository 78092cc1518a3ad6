"""The verbs of the command line (`kiln.cli.main` parses; these do the work)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from kiln import config
from kiln.cli.compile import compile_model, example_inputs, kernel_count, parse_shapes
from kiln.cli.main import dim_value
from kiln.cli.run import output_arrays
from kiln.errors import KilnError
from kiln.relax.frontend.common import ident


def compile_for(args: argparse.Namespace, quiet: bool = True) -> Any:
    """The model the verb's arguments name, compiled (or loaded: a .so) with their options."""
    timed = getattr(args, "time_passes", False) or config.load().time_passes
    return compile_model(
        args.model,
        args.target,
        args.exec_mode,
        parse_shapes(args.shape),
        quiet=quiet,
        time_passes=timed,
    )


_model = compile_for  # NOTE: the name kiln.cli.profile imports


def _check_output(path: str) -> None:
    """``-o``: a file to write, in a folder that exists (checked before the compile)."""
    out = Path(path)
    if out.is_dir():
        raise KilnError(f"-o {path}: is a folder; expected the path of the .so to write")
    if not out.parent.is_dir():
        raise KilnError(f"-o {path}: no folder {str(out.parent)!r} to write it in")


def cmd_compile(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    _check_output(args.output)
    model = _model(args, quiet=args.quiet)
    path = model.export(args.output)
    if not args.quiet:
        print(
            f"wrote {path} ({kernel_count(model)} kernels, {model.exec_mode} mode, "
            f"{time.perf_counter() - t0:.1f} s)"
        )
    return 0


def _dims(items: list[Any] | None) -> dict[str, int]:
    """``--dim`` values: (name, size) pairs, or ``NAME=N`` texts (`kiln.cli.main.dim_value`)."""
    try:
        pairs = [dim_value(i) if isinstance(i, str) else i for i in items or []]
    except argparse.ArgumentTypeError as e:
        raise KilnError(f"--dim: {e}") from None
    return dict(pairs)


def symbolic_dims(model: Any) -> list[str]:
    """The names of the symbolic dims of the model's inputs, in order of appearance."""
    found = [
        str(d) for spec in model.inputs or () for d in spec.dims or () if not isinstance(d, int)
    ]
    return list(dict.fromkeys(found))


def _example_inputs(model: Any, args: argparse.Namespace) -> dict[str, np.ndarray]:
    """Random inputs fitting the model's signature (symbolic dims from ``--dim``)."""
    if model.inputs is None:
        raise KilnError(
            f"{args.model} records no input shapes (a library exported by an older kiln): "
            "export it again with this kiln, or pass the .onnx model"
        )
    sizes = _dims(args.dim)
    known = symbolic_dims(model)
    for name in sizes:
        if name not in known:
            has = f"its symbolic dims are {', '.join(known)}" if known else "its shapes are fixed"
            raise KilnError(f"--dim {name}=...: the model has no symbolic dim {name!r} ({has})")
    return example_inputs(model.inputs, model._call.params, sizes)


def cmd_bench(args: argparse.Namespace) -> int:
    against = list(dict.fromkeys(args.against))
    if against and Path(args.model).suffix == ".so":
        raise KilnError(f"--against {against[0]} needs the .onnx model, not {args.model}")
    model = _model(args)
    inputs = _example_inputs(model, args)
    print(bench_header(model, inputs, _dims(args.dim), args))
    with tempfile.TemporaryDirectory() as tmp:
        lib = model.export(Path(tmp) / "model.so")
        feed = Path(tmp) / "inputs.npz"
        np.savez(feed, **inputs)
        if against:
            _check_agreement(model, inputs, args.model)
        print(f"{'runtime':<14} {'threads':>7} {'median ms':>10} {'min-max ms':>19} {'vs kiln':>8}")
        for n in args.threads:
            base = 0.0
            for name, target in [("kiln", str(lib)), *((a, args.model) for a in against)]:
                times = _timed(name, target, str(feed), n, args.runs)
                med = float(np.median(times))
                base = base or med
                spread = f"{min(times):.3f}-{max(times):.3f}"
                print(f"{name:<14} {n:>7} {med:>10.3f} {spread:>19} {med / base:>7.2f}x")
    if against:
        print(
            "vs kiln: the runtime's median over kiln's at the same threads (above 1: kiln faster)"
        )
    return 0


def bench_header(
    model: Any, inputs: dict[str, np.ndarray], sizes: dict[str, int], args: argparse.Namespace
) -> str:
    """What `kiln bench` measures: the inputs' shapes (and the symbolic dims it picked), the
    calls timed and the thread counts."""
    shapes = ", ".join(f"{k}: {v.dtype}[{','.join(map(str, v.shape))}]" for k, v in inputs.items())
    picked = [d for d in symbolic_dims(model) if d not in sizes]
    note = ""
    if picked:
        note = (f" ({', '.join(f'{d}=1' for d in picked)} picked; "
                f"set with --dim {picked[0]}=N)")  # fmt: skip
    threads = ",".join(map(str, args.threads))
    return (f"inputs: {shapes}{note}\n{args.runs} timed calls per row after 3 warm-up calls; "
            f"threads: {threads}")  # fmt: skip


def _check_agreement(model: Any, inputs: dict[str, np.ndarray], path: str) -> None:
    try:
        import onnxruntime as ort
    except ImportError:
        raise KilnError("--against onnxruntime needs onnxruntime (kiln[onnx])") from None
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = {i.name: inputs[_param_for(i.name, inputs)] for i in sess.get_inputs()}
    ref = sess.run(None, feed)
    got = output_arrays(model(**inputs))
    worst = 0.0
    for r, g in zip(ref, got):
        if not np.allclose(g, r, rtol=2e-3, atol=2e-3):
            raise KilnError("kiln and onnxruntime disagree on the same inputs "
                            f"(max abs diff {np.abs(g - r).max():.3g})")  # fmt: skip
        worst = max(worst, float(np.abs(g.astype("float64") - r).max()) if r.size else 0.0)
    print(f"outputs agree with onnxruntime (max abs diff {worst:.3g})")


def _param_for(name: str, inputs: dict[str, Any]) -> str:
    return name if name in inputs else ident(name, "input")


def _timed(runtime: str, target: str, feed: str, threads: int, runs: int) -> list[float]:
    """Milliseconds of each of ``runs`` calls, timed in a process of its own (`bench_worker`)."""
    env = config.child_env(KILN_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    cmd = [sys.executable, "-m", "kiln.cli.bench_worker", runtime, target, feed, str(threads),
           str(runs)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode:
        last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise KilnError(f"{runtime} timing with {threads} thread(s) failed: {last}")
    return [t * 1e3 for t in json.loads(proc.stdout.strip().splitlines()[-1])]


COMMANDS = {"compile": cmd_compile, "bench": cmd_bench}
