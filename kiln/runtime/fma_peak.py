"""`fma_peak_gflops`: this machine's fp32 FMA peak on one thread, measured once and cached.

A profile's ``% peak`` column divides a kernel's achieved GFLOP/s by the peak of the threads it
ran on. The peak is measured, not looked up: a tiny C loop of independent vector FMA chains
(as wide as ``-march=native`` allows, enough chains to hide the FMA latency) built with kiln's
own toolchain (`kiln.runtime.toolchain.compile_c`, so its flags and cache) and timed a few
times; the best run counts, since other processes can only slow it down. The result is stored
in kiln's cache directory under a key of the compiler and CPU (`toolchain.cache_key`), so a
process measures at most once per machine and a shared cache never mixes machines.
"""

from __future__ import annotations

import ctypes
import json
from pathlib import Path

from kiln.runtime import toolchain

FMA_LOOP_C = r"""
#include <stdint.h>
#include <time.h>

#if defined(__AVX512F__)
#include <immintrin.h>
typedef __m512 vec;
#define LANES 16
#define SET1 _mm512_set1_ps
#define FMA _mm512_fmadd_ps
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
typedef __m256 vec;
#define LANES 8
#define SET1 _mm256_set1_ps
#define FMA _mm256_fmadd_ps
#else
typedef float vec;
#define LANES 1
#define SET1(x) (x)
#define FMA(a, b, c) ((a) * (b) + (c))
#endif

#define CHAINS 12

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* GFLOP/s of `iters` rounds of CHAINS independent FMAs on one thread; *sink keeps the
 * results alive so the compiler cannot drop the loop. */
double kiln_fma_gflops(int64_t iters, float* sink) {
  vec acc[CHAINS];
  vec b = SET1(1.0000001f), c = SET1(0.999999f);
  for (int i = 0; i < CHAINS; i++) acc[i] = SET1((float)i);
  double t0 = now_s();
  for (int64_t k = 0; k < iters; k++) {
#pragma GCC unroll 12
    for (int i = 0; i < CHAINS; i++) acc[i] = FMA(acc[i], b, c);
  }
  double dt = now_s() - t0;
  float s = 0;
  for (int i = 0; i < CHAINS; i++) s += ((float*)&acc[i])[0];
  *sink = s;
  return (double)iters * CHAINS * LANES * 2 / dt / 1e9;
}
"""

RUNS = 5
"""Timed runs of the loop; the fastest counts."""

ITERS = 2_000_000
"""Rounds per run: 24M vector FMAs, ~10-50 ms on current x86 cores."""

_measured: dict[str, float] = {}


def fma_peak_gflops() -> float:
    """This machine's fp32 FMA peak on one thread, in GFLOP/s (multiply by the threads a kernel
    runs on for theirs): read from kiln's cache, else measured and stored there."""
    lib = toolchain.compile_c(FMA_LOOP_C, name_hint="fma_peak")
    key = lib.stem
    if key in _measured:
        return _measured[key]
    record = lib.with_name(f"{key}.peak.json")
    peak = _read(record)
    if peak is None:
        peak = _measure(lib)
        # NOTE: a lost race writes the same kind of number twice; rename keeps it atomic
        tmp = record.with_suffix(f".tmp{id(record)}")
        tmp.write_text(json.dumps({"gflops_1_thread": peak}))
        tmp.replace(record)
    _measured[key] = peak
    return peak


def _read(record: Path) -> float | None:
    try:
        value = json.loads(record.read_text())["gflops_1_thread"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def _measure(lib: Path) -> float:
    fn = ctypes.CDLL(str(lib)).kiln_fma_gflops
    fn.restype = ctypes.c_double
    fn.argtypes = [ctypes.c_int64, ctypes.POINTER(ctypes.c_float)]
    sink = ctypes.c_float()
    return max(fn(ITERS, ctypes.byref(sink)) for _ in range(RUNS))


__all__ = ["fma_peak_gflops"]
