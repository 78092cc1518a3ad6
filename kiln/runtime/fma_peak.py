"""The machine's bounds, measured once and cached: `fma_peak_gflops` (fp32 FMA peak on one
thread) and `memory_bandwidth_gbs` (streaming bandwidth on some threads).

A profile's ``% peak`` column divides a kernel's achieved GFLOP/s by the peak of the threads it
ran on, and its ``% bound`` column the time the kernel would take at whichever bound binds it
(its FLOPs at the peak or its bytes at the bandwidth) by its time. Both are measured, not looked
up: the peak by a tiny C loop of independent vector FMA chains (as wide as ``-march=native``
allows, enough chains to hide the FMA latency), the bandwidth by a triad ``a = b + s * c`` over
three arrays much larger than any L3 (`TRIAD_FLOATS`), on as many OpenMP threads as the profile
runs on; both built with kiln's own toolchain (`kiln.runtime.toolchain.compile_c`, so its flags
and cache) and timed a few times, the best run counting, since other processes can only slow it
down. The results are stored in kiln's cache directory under a key of the compiler and CPU
(`toolchain.cache_key`), so a process measures each at most once per machine and a shared cache
never mixes machines.
"""

from __future__ import annotations

import ctypes
import json
from collections.abc import Callable
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

TRIAD_C = r"""
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* GB/s of the best of `reps` passes of a[i] = b[i] + 0.5 * c[i] over n floats on `threads`
 * OpenMP threads: 12 bytes per element (two reads, one write; the write-allocate read is not
 * counted, as STREAM does not). Each thread first touches the part it streams. -1: no memory. */
double kiln_triad_gbs(int64_t n, int32_t reps, int32_t threads) {
  float* a = (float*)aligned_alloc(64, (size_t)n * 4);
  float* b = (float*)aligned_alloc(64, (size_t)n * 4);
  float* c = (float*)aligned_alloc(64, (size_t)n * 4);
  double best = -1.0;
  if (a != NULL && b != NULL && c != NULL) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; i++) {
      a[i] = 0.0f;
      b[i] = 1.0f;
      c[i] = 2.0f;
    }
    for (int32_t r = 0; r < reps; r++) {
      double t0 = now_s(), gbs;
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int64_t i = 0; i < n; i++) a[i] = b[i] + 0.5f * c[i];
      gbs = 12.0 * (double)n / (now_s() - t0) / 1e9;
      if (gbs > best) best = gbs;
    }
  }
  free(a);
  free(b);
  free(c);
  return best;
}
"""

TRIAD_FLOATS = 8 * 1024 * 1024
"""Elements per triad array: 3 x 32 MiB, more than the L3 of the CPUs kiln runs on."""

RUNS = 5
"""Timed runs of each loop; the fastest counts."""

ITERS = 2_000_000
"""Rounds per run: 24M vector FMAs, ~10-50 ms on current x86 cores."""

_measured: dict[str, float] = {}


def fma_peak_gflops() -> float:
    """This machine's fp32 FMA peak on one thread, in GFLOP/s (multiply by the threads a kernel
    runs on for theirs): read from kiln's cache, else measured and stored there."""
    lib = toolchain.compile_c(FMA_LOOP_C, name_hint="fma_peak")
    return _cached(lib, "gflops_1_thread", lambda: _measure(lib))


def memory_bandwidth_gbs(threads: int = 1) -> float:
    """This machine's streaming memory bandwidth on ``threads`` threads, in GB/s (the triad of
    the module docstring): read from kiln's cache, else measured and stored there."""
    lib = toolchain.compile_c(TRIAD_C, name_hint="triad_bandwidth")
    return _cached(lib, f"gbs_{threads}_threads", lambda: _measure_triad(lib, threads))


def _cached(lib: Path, field: str, measure: Callable[[], float]) -> float:
    """``field`` of the record beside ``lib``: from this process, the record, or ``measure``."""
    key = f"{lib.stem}:{field}"
    if key in _measured:
        return _measured[key]
    record = lib.with_name(f"{lib.stem}.peak.json")
    fields = _read(record)
    value = fields.get(field)
    if value is None:
        value = measure()
        # NOTE: a lost race writes the same kind of number twice; rename keeps it atomic
        tmp = record.with_suffix(f".tmp{id(record)}")
        tmp.write_text(json.dumps({**_read(record), field: value}))
        tmp.replace(record)
    _measured[key] = value
    return value


def _read(record: Path) -> dict[str, float]:
    """The record's positive numbers by field ({} when missing or unreadable)."""
    try:
        data = json.loads(record.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        k: float(v)
        for k, v in data.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
    }


def _measure(lib: Path) -> float:
    fn = ctypes.CDLL(str(lib)).kiln_fma_gflops
    fn.restype = ctypes.c_double
    fn.argtypes = [ctypes.c_int64, ctypes.POINTER(ctypes.c_float)]
    sink = ctypes.c_float()
    return max(fn(ITERS, ctypes.byref(sink)) for _ in range(RUNS))


def _measure_triad(lib: Path, threads: int) -> float:
    fn = ctypes.CDLL(str(lib)).kiln_triad_gbs
    fn.restype = ctypes.c_double
    fn.argtypes = [ctypes.c_int64, ctypes.c_int32, ctypes.c_int32]
    gbs = fn(TRIAD_FLOATS, RUNS, max(1, threads))
    if gbs <= 0:
        raise MemoryError(
            f"kiln could not allocate {3 * TRIAD_FLOATS * 4 >> 20} MiB to measure the "
            "memory bandwidth"
        )
    return gbs


__all__ = ["fma_peak_gflops", "memory_bandwidth_gbs"]
