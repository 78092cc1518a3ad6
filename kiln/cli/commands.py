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
from kiln.driver.timing import CompileTimer
from kiln.errors import KilnError
from kiln.relax.frontend.common import ident


def _model(args: argparse.Namespace, quiet: bool = True) -> Any:
    timed = getattr(args, "time_passes", False) or config.load().time_passes
    return compile_model(
        args.model,
        args.target,
        args.exec_mode,
        parse_shapes(args.shape),
        quiet=quiet,
        timer=CompileTimer() if timed else None,
    )


def _outputs(value: Any) -> list[np.ndarray]:
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _outputs(v)]
    return [value.numpy() if hasattr(value, "numpy") else np.asarray(value)]


def cmd_compile(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    model = _model(args, quiet=args.quiet)
    path = model.export(args.output)
    if not args.quiet:
        print(
            f"wrote {path} ({kernel_count(model)} kernels, {model.exec_mode} mode, "
            f"{time.perf_counter() - t0:.1f} s)"
        )
    return 0


def _read_inputs(items: list[str], params: tuple[str, ...]) -> tuple[list, dict]:
    positional, named = [], {}
    for item in items:
        name, sep, file = item.partition("=")
        if not sep:
            name, file = "", item
        if not Path(file).is_file():
            raise KilnError(f"no input file {file!r}")
        value = np.load(file)
        if name:
            named[name] = value
        else:
            positional.append(value)
    return positional, named


def _expected(model: Any) -> str:
    if model.inputs is None:
        return ", ".join(model._call.params)
    return "; ".join(spec.describe() for spec in model.inputs)


def cmd_run(args: argparse.Namespace) -> int:
    model = _model(args)
    params = model._call.params
    positional, named = _read_inputs(args.input, params)
    if len(positional) + len(named) != len(params):
        raise KilnError(
            f"the model takes {len(params)} input(s), {_expected(model)}; got "
            f"{len(positional) + len(named)} (pass each with --input NAME=FILE.npy)"
        )
    outs = _outputs(model(*positional, **named))
    names = [t.name for t in model.outputs or ()]
    folder = Path(args.output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    for k, out in enumerate(outs):
        path = folder / f"output_{k}.npy"
        np.save(path, out)
        label = f" ({names[k]})" if len(names) == len(outs) else ""
        print(f"{path}{label}: {out.dtype}{list(out.shape)}")
    return 0


def _dims(items: list[str] | None) -> dict[str, int]:
    out = {}
    for item in items or []:
        name, _, value = item.partition("=")
        if not value.isdigit():
            raise KilnError(f"--dim takes NAME=N, got {item!r}")
        out[name] = int(value)
    return out


def _example_inputs(model: Any, args: argparse.Namespace) -> dict[str, np.ndarray]:
    """Random inputs fitting the model's signature (symbolic dims from ``--dim``)."""
    if model.inputs is None:
        raise KilnError(
            f"{args.model} records no input shapes (a library exported by an older kiln): "
            "export it again with this kiln, or pass the .onnx model"
        )
    return example_inputs(model.inputs, model._call.params, _dims(args.dim))


def cmd_bench(args: argparse.Namespace) -> int:
    threads = [int(t) for t in args.threads.split(",") if t.strip()]
    if args.against and Path(args.model).suffix == ".so":
        raise KilnError(f"--against {args.against} needs the .onnx model, not {args.model}")
    model = _model(args)
    inputs = _example_inputs(model, args)
    with tempfile.TemporaryDirectory() as tmp:
        lib = model.export(Path(tmp) / "model.so")
        feed = Path(tmp) / "inputs.npz"
        np.savez(feed, **inputs)
        if args.against:
            _check_agreement(model, inputs, args.model)
        print(f"{'runtime':<14} {'threads':>7} {'median ms':>10} {'min ms':>10}")
        for n in threads:
            rows = [("kiln", str(lib))]
            if args.against:
                rows.append(("onnxruntime", args.model))
            for name, target in rows:
                med, low = _timed(name, target, str(feed), n, args.runs)
                print(f"{name:<14} {n:>7} {med:>10.3f} {low:>10.3f}")
    return 0


def _check_agreement(model: Any, inputs: dict[str, np.ndarray], path: str) -> None:
    try:
        import onnxruntime as ort
    except ImportError:
        raise KilnError("--against onnxruntime needs onnxruntime (kiln[onnx])") from None
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = {i.name: inputs[_param_for(i.name, inputs)] for i in sess.get_inputs()}
    ref = sess.run(None, feed)
    got = _outputs(model(**inputs))
    worst = 0.0
    for r, g in zip(ref, got):
        if not np.allclose(g, r, rtol=2e-3, atol=2e-3):
            raise KilnError("kiln and onnxruntime disagree on the same inputs "
                            f"(max abs diff {np.abs(g - r).max():.3g})")  # fmt: skip
        worst = max(worst, float(np.abs(g.astype("float64") - r).max()) if r.size else 0.0)
    print(f"outputs agree with onnxruntime (max abs diff {worst:.3g})")


def _param_for(name: str, inputs: dict[str, Any]) -> str:
    return name if name in inputs else ident(name, "input")


def _timed(runtime: str, target: str, feed: str, threads: int, runs: int) -> tuple[float, float]:
    env = config.child_env(KILN_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    cmd = [sys.executable, "-m", "kiln.cli.bench_worker", runtime, target, feed, str(threads),
           str(runs)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode:
        raise KilnError(f"{runtime} timing failed: {proc.stderr.strip().splitlines()[-1:]}")
    times = json.loads(proc.stdout.strip().splitlines()[-1])
    return float(np.median(times)) * 1e3, float(np.min(times)) * 1e3


COMMANDS = {"compile": cmd_compile, "run": cmd_run, "bench": cmd_bench}
