"""kiln's main job: compile a small model, run it in both VM modes, check it, time it, profile it,
export it; then compile an ONNX model from its file and check it against onnxruntime -- then
the single-kernel examples.

Run with ``python -m kiln.examples.demo`` (or ``make demo``). The model is the bundled ``R``
script MLP (`kiln.examples.models.mlp`: 64 -> 128 -> 128 -> 10, softmax, symbolic batch). It is
compiled with `kiln.compile` in bytecode and in compiled mode (operators fused into one kernel
per layer -- ``default_fused_matmul_add_relu`` -- and scheduled for the CPU, VM code, C through
the system compiler, cached on disk), called with numpy arrays, compared with the same model in
numpy, and timed against it (median time per call). The compiled-mode model's per-kernel
profile (one row per fused kernel; medians of calls made after warm-up ones, not of one call
after the process was idle) is printed, and it is exported as one shared library,
loaded back with `kiln.load` and checked again; the path is printed. Then the bundled ONNX CNN
(`kiln.examples.models.cnn_onnx`) is saved as ``cnn.onnx``, compiled with
``kiln.compile("cnn.onnx")`` (the frontend, the graph passes, NCHWc convolutions), called at two
batch sizes by input name, compared with onnxruntime on the same file, and profiled at batch 8
(when ``onnx`` or
``onnxruntime`` is not installed the step says so and is skipped). Then `kiln.examples.kernels`
builds and times single kernels.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import kiln
from kiln import config
from kiln.examples import kernels
from kiln.examples.models import MLP, mlp_reference, mlp_weights
from kiln.examples.models.cnn_onnx import cnn_onnx_model
from kiln.runtime.disk_cache import cache_folder


def median_us(fn: Callable[[], Any], repeat: int, number: int = 20) -> float:
    """Median over ``repeat`` samples of the mean time of ``number`` calls, in microseconds."""
    fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples) * 1e6


def run_model(batch: int, repeat: int, out_dir: Path) -> Path:
    """Compile, check, time and profile the MLP in both modes; export it; return the path."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, 64)).astype("float32")
    weights = mlp_weights()
    want = mlp_reference(x, *weights)
    print(f"model: MLP 64 -> 128 -> 128 -> 10 + softmax, batch {batch} (any batch works)")
    print(f"{'':<22} {'build s':>8} {'us/call':>9}  check")
    models = {}
    for mode in ("bytecode", "compiled"):
        start = time.perf_counter()
        model = kiln.compile(MLP, exec_mode=mode)
        built = time.perf_counter() - start
        np.testing.assert_allclose(model(x, *weights).numpy(), want, rtol=1e-4, atol=1e-6)
        us = median_us(lambda m=model: m(x, *weights), repeat)
        print(f"{'kiln ' + mode:<22} {built:>8.2f} {us:>9.1f}  ok")
        models[mode] = model
    us = median_us(lambda: mlp_reference(x, *weights), repeat)
    print(f"{'numpy':<22} {'':>8} {us:>9.1f}")
    print()
    print(models["compiled"].profile(x, *weights))
    path = models["compiled"].export(out_dir / "mlp.so")
    loaded = kiln.load(path)
    np.testing.assert_allclose(loaded(x, *weights).numpy(), want, rtol=1e-4, atol=1e-6)
    print(f"\nexported library (kernels, VM code and all): {path}")
    print("  load it anywhere with kiln.load(path), or without the compiler:")
    print("  kiln.runtime.VirtualMachine(kiln.runtime.load_module(path))")
    return path


def run_onnx(repeat: int, out_dir: Path) -> None:
    """Compile the bundled ONNX CNN from its file, check it against onnxruntime, time both."""
    try:
        import onnx
        import onnxruntime as ort
    except ImportError as e:
        print(f"\nONNX step skipped: {e.name} is not installed (pip install 'kiln[onnx]')")
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "cnn.onnx"
    onnx.save(cnn_onnx_model(), path)
    print(f"\nONNX model {path}: residual CNN, conv/bn/relu/pool/depthwise/gemm, batch symbolic")
    start = time.perf_counter()
    model = kiln.compile(str(path))
    print(f"kiln.compile({path.name!r}): {time.perf_counter() - start:.2f} s")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    print(f"{'batch':>5} {'kiln us':>9} {'onnxruntime us':>15}  check")
    for batch in (1, 8):
        image = rng.standard_normal((batch, 3, 32, 32)).astype("float32")
        want = session.run(None, {"image": image})[0]
        got = model(image=image).numpy()
        np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)
        us = median_us(lambda m=model, a=image: m(image=a), repeat)
        ort_us = median_us(lambda a=image: session.run(None, {"image": a}), repeat)
        print(f"{batch:>5} {us:>9.1f} {ort_us:>15.1f}  ok (vs onnxruntime, rtol 2e-3)")
    print()
    print(model.profile(image=image))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="timed samples per row")
    parser.add_argument("--batch", type=int, default=32, help="rows the model is called with")
    parser.add_argument("--out", type=Path, default=None, help="folder for the exported model")
    args = parser.parse_args(argv)
    # NOTE: the demo loads what it writes: inside kiln's cache only in a folder made and checked
    # like the cache's own (0700, not writable by others)
    out_dir = args.out if args.out is not None else cache_folder(config.load().cache_dir / "demo")
    run_model(args.batch, args.repeat, out_dir)
    run_onnx(args.repeat, out_dir)
    print("\nsingle kernels:")
    return kernels.main(["--repeat", str(args.repeat)])


if __name__ == "__main__":
    sys.exit(main())
