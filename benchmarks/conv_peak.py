"""Convolutions on one thread as a share of the CPU's fp32 FMA peak, kiln vs onnxruntime.

    OMP_NUM_THREADS=1 KILN_NUM_THREADS=1 taskset -c 1 python benchmarks/conv_peak.py [--reps 60]
                                        [--cases 0,1,2] [--resnet18 | --resnet50 | --small-cnn]

Times the cases of `bench_ops.CONVS` (with ``--resnet18``: ResNet-18's distinct convolutions),
kiln's channel-blocked kernel and onnxruntime's one-Conv model, built as `bench_ops.py` builds
them, in the calling thread's CPU time (``time.thread_time_ns``), interleaved with an FMA loop
like /work/shared/tools/fma_peak.c timed the same way: on a shared machine the wall clock
counts the time other processes hold the core, the thread's CPU time does not, so "% of peak"
stays meaningful (a busy sibling hyperthread or a contended cache still slows both). Medians
over ``--reps`` rounds.
NOTE: onnxruntime runs on the calling thread with ``intra_op_num_threads=1``; kiln's kernels do
with one OpenMP thread. Neither is meaningful on more threads here.
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_ops  # noqa: E402 - the sibling script, importable once its folder is on the path

FMA_LOOP = r"""
#include <immintrin.h>
#include <string.h>
#if defined(__AVX512F__)
typedef __m512 vec;
#define LANES 16
#define SET1 _mm512_set1_ps
#define FMA _mm512_fmadd_ps
#else
typedef __m256 vec;
#define LANES 8
#define SET1 _mm256_set1_ps
#define FMA _mm256_fmadd_ps
#endif
double fma_flops(long iters, float* sink) {
  vec acc[12];
  vec b = SET1(1.0000001f), c = SET1(0.999999f);
  for (int i = 0; i < 12; i++) acc[i] = SET1((float)i);
  for (long k = 0; k < iters; k++) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; i++) acc[i] = FMA(acc[i], b, c);
  }
  float lanes[LANES], s = 0;
  for (int i = 0; i < 12; i++) {
    memcpy(lanes, &acc[i], sizeof(vec));
    s += lanes[0];
  }
  *sink = s;
  return iters * 12.0 * LANES * 2;
}
"""


def fma_peak() -> Any:
    """A call returning one measurement of the FMA peak (FLOP/s of the thread's CPU time)."""
    folder = Path(tempfile.mkdtemp(prefix="kiln_fma_"))
    src, lib = folder / "fma.c", folder / "fma.so"
    src.write_text(FMA_LOOP)
    cmd = ["cc", "-O2", "-march=native", "-shared", "-fPIC", str(src), "-o", str(lib)]
    subprocess.run(cmd, check=True)
    fn = ctypes.CDLL(str(lib)).fma_flops
    fn.restype = ctypes.c_double
    sink = ctypes.c_float()

    def measure() -> float:
        t0 = time.thread_time_ns()
        flops = fn(2_000_000, ctypes.byref(sink))
        return flops / ((time.thread_time_ns() - t0) * 1e-9)

    return measure


RESNET18 = (
    bench_ops.Conv("stem 1x3x224x224 k7x7x64 s2 p3", 3, 224, 64, 7, stride=2, pad=3),
    bench_ops.Conv("layer1 1x64x56x56 k3x3x64 p1", 64, 56, 64, 3, pad=1),
    bench_ops.Conv("layer2 1x64x56x56 k3x3x128 s2 p1", 64, 56, 128, 3, stride=2, pad=1),
    bench_ops.Conv("layer2 1x64x56x56 k1x1x128 s2", 64, 56, 128, 1, stride=2),
    bench_ops.Conv("layer2 1x128x28x28 k3x3x128 p1", 128, 28, 128, 3, pad=1),
    bench_ops.Conv("layer3 1x128x28x28 k3x3x256 s2 p1", 128, 28, 256, 3, stride=2, pad=1),
    bench_ops.Conv("layer3 1x128x28x28 k1x1x256 s2", 128, 28, 256, 1, stride=2),
    bench_ops.Conv("layer3 1x256x14x14 k3x3x256 p1", 256, 14, 256, 3, pad=1),
    bench_ops.Conv("layer4 1x256x14x14 k3x3x512 s2 p1", 256, 14, 512, 3, stride=2, pad=1),
    bench_ops.Conv("layer4 1x256x14x14 k1x1x512 s2", 256, 14, 512, 1, stride=2),
    bench_ops.Conv("layer4 1x512x7x7 k3x3x512 p1", 512, 7, 512, 3, pad=1),
)
"""ResNet-18's distinct convolutions at 224x224 (``--resnet18``), in model order."""

C = bench_ops.Conv
RESNET50 = (
    C("stem 1x3x224x224 k7x7x64 s2 p3 (x1)", 3, 224, 64, 7, stride=2, pad=3),
    C("l1 1x64x56x56 k1x1x64 (x1)", 64, 56, 64, 1),
    C("l1 1x64x56x56 k3x3x64 p1 (x3)", 64, 56, 64, 3, pad=1),
    C("l1 1x64x56x56 k1x1x256 (x4)", 64, 56, 256, 1),
    C("l1 1x256x56x56 k1x1x64 (x2)", 256, 56, 64, 1),
    C("l2 1x256x56x56 k1x1x128 (x1)", 256, 56, 128, 1),
    C("l2 1x128x56x56 k3x3x128 s2 p1 (x1)", 128, 56, 128, 3, stride=2, pad=1),
    C("l2 1x256x56x56 k1x1x512 s2 (x1)", 256, 56, 512, 1, stride=2),
    C("l2 1x128x28x28 k1x1x512 (x4)", 128, 28, 512, 1),
    C("l2 1x512x28x28 k1x1x128 (x3)", 512, 28, 128, 1),
    C("l2 1x128x28x28 k3x3x128 p1 (x3)", 128, 28, 128, 3, pad=1),
    C("l3 1x512x28x28 k1x1x256 (x1)", 512, 28, 256, 1),
    C("l3 1x256x28x28 k3x3x256 s2 p1 (x1)", 256, 28, 256, 3, stride=2, pad=1),
    C("l3 1x512x28x28 k1x1x1024 s2 (x1)", 512, 28, 1024, 1, stride=2),
    C("l3 1x256x14x14 k1x1x1024 (x6)", 256, 14, 1024, 1),
    C("l3 1x1024x14x14 k1x1x256 (x5)", 1024, 14, 256, 1),
    C("l3 1x256x14x14 k3x3x256 p1 (x5)", 256, 14, 256, 3, pad=1),
    C("l4 1x1024x14x14 k1x1x512 (x1)", 1024, 14, 512, 1),
    C("l4 1x512x14x14 k3x3x512 s2 p1 (x1)", 512, 14, 512, 3, stride=2, pad=1),
    C("l4 1x1024x14x14 k1x1x2048 s2 (x1)", 1024, 14, 2048, 1, stride=2),
    C("l4 1x512x7x7 k1x1x2048 (x3)", 512, 7, 2048, 1),
    C("l4 1x2048x7x7 k1x1x512 (x2)", 2048, 7, 512, 1),
    C("l4 1x512x7x7 k3x3x512 p1 (x2)", 512, 7, 512, 3, pad=1),
)
"""ResNet-50's distinct convolutions at 224x224 (``--resnet50``; torchvision's, stride in the
3x3), in model order, with how often each runs."""

SMALL_CNN = (
    bench_ops.Conv("stem 1x3x64x64 k3x3x32 p1", 3, 64, 32, 3, pad=1),
    bench_ops.Conv("depthwise 1x32x32x32 k3x3 p1", 32, 32, 32, 3, pad=1, groups=32),
    bench_ops.Conv("1x1 1x32x32x32 k1x1x64", 32, 32, 64, 1),
    bench_ops.Conv("1x64x32x32 k3x3x64 s2 p1", 64, 32, 64, 3, stride=2, pad=1),
)
"""The small CNN's convolutions (`model_zoo.SmallCNN`, ``--small-cnn``), in model order."""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=60, help="rounds (median over them)")
    p.add_argument("--cases", help="indices into the case list (default: all)")
    p.add_argument("--resnet18", action="store_true", help="ResNet-18's convolutions instead")
    p.add_argument("--resnet50", action="store_true", help="ResNet-50's convolutions instead")
    p.add_argument("--small-cnn", action="store_true", help="the small CNN's convolutions instead")
    args = p.parse_args()
    convs = (
        RESNET18
        if args.resnet18
        else RESNET50
        if args.resnet50
        else SMALL_CNN
        if args.small_cnn
        else bench_ops.CONVS
    )
    cases = args.cases or ",".join(str(i) for i in range(len(convs)))
    import numpy as np

    peak = fma_peak()
    rng = np.random.default_rng(0)
    print("| case | kiln GFLOP/s | % of peak | onnxruntime GFLOP/s | % of peak | kiln vs ort |")
    print("|---|---|---|---|---|---|")
    for i in (int(c) for c in cases.split(",")):
        conv = convs[i]
        x = rng.standard_normal((1, conv.c, conv.h, conv.h), dtype="float32")
        shape = (conv.o, conv.c // conv.groups, conv.k, conv.k)
        w = rng.standard_normal(shape, dtype="float32") / np.float32(10)
        calls = {"kiln": bench_ops.kiln_conv(x, w, conv)}
        calls["ort"] = bench_ops.ort_call("conv2d", [x, w], 1, conv)
        times: dict[str, list[float]] = {k: [] for k in calls}
        peaks = []
        for _ in range(args.reps):
            peaks.append(peak())
            for k, f in calls.items():
                t0 = time.thread_time_ns()
                f()
                times[k].append((time.thread_time_ns() - t0) * 1e-9)
        top = statistics.median(peaks)
        kiln, ort = (statistics.median(times[k]) for k in ("kiln", "ort"))
        cells = [conv.name]
        for t in (kiln, ort):
            cells += [f"{conv.flops / t / 1e9:.1f}", f"{conv.flops / t / top:.0%}"]
        cells.append(f"{ort / kiln:.2f}x")
        print("| " + " | ".join(cells) + " |", flush=True)
    print(f"\nfp32 FMA peak of this thread (median): {top / 1e9:.1f} GFLOP/s")


if __name__ == "__main__":
    main()
