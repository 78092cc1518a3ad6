"""conv2d NCHW 1x64x56x56 with 64 3x3 filters, padding 1: kiln's ``dnnl`` partition (generated C,
called through tvm-ffi from Python) against oneDNN called directly from C, in the same process.

    python benchmarks/bench_dnnl.py [--rounds 21] [--iters 10]

Both sides take NCHW / OIHW float32 buffers, let oneDNN choose its memory formats and reorder in
and out, as a user of oneDNN's C API would. The direct side is a hand-written C loop (compiled by
kiln's toolchain) that times ``iters`` calls with ``clock_gettime``; the kiln side times
``iters`` Python calls of the generated entry. Rounds alternate between the two (the machine may
be shared: a round pair sees the same load); printed: the medians of the per-round means and the
median of the per-round ratios (the issue's bar: within 10%).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import tvm_ffi

from kiln.relax.backend import dnnl
from kiln.relax.transform import LowerTE, PartitionForCompiler
from kiln.runtime.toolchain import DEFAULT_FLAGS, compile_c
from kiln.script import ir as I
from kiln.script import relax as R

N, C, H, W, O, K = 1, 64, 56, 56, 64, 3


@I.ir_module
class Conv:
    @R.function
    def main(x: R.Tensor((1, 64, 56, 56), "float32"), w: R.Tensor((64, 64, 3, 3), "float32")):
        with R.dataflow():
            y = R.nn.conv2d(x, w, padding=1)
            R.output(y)
        return y


DIRECT_C = r"""
#include <stdlib.h>
#include <time.h>
#include <tvm/ffi/c_api.h>
#include <oneapi/dnnl/dnnl.h>

#define CK(x) do { if ((x) != dnnl_success) { \
  TVMFFIErrorSetRaisedFromCStr("RuntimeError", #x); return -1; } } while (0)

static dnnl_engine_t eng;
static dnnl_stream_t strm;
static dnnl_primitive_t conv, r_src, r_wei, r_dst;
static dnnl_memory_t u_src, u_wei, u_dst, c_src, c_wei, c_dst;

static int make_reorder(dnnl_memory_t from, dnnl_memory_t to, dnnl_primitive_t* out) {
  const_dnnl_memory_desc_t a, b;
  dnnl_primitive_desc_t pd;
  CK(dnnl_memory_get_memory_desc(from, &a));
  CK(dnnl_memory_get_memory_desc(to, &b));
  CK(dnnl_reorder_primitive_desc_create(&pd, a, eng, b, eng, NULL));
  CK(dnnl_primitive_create(out, pd));
  return 0;
}

static int setup(void) {
  dnnl_memory_desc_t s, w, d, sa, wa, da;
  dnnl_primitive_desc_t pd;
  CK(dnnl_engine_create(&eng, dnnl_cpu, 0));
  CK(dnnl_stream_create(&strm, eng, dnnl_stream_default_flags));
  CK(dnnl_memory_desc_create_with_tag(&s, 4, (dnnl_dims_t){1, 64, 56, 56}, dnnl_f32, dnnl_nchw));
  CK(dnnl_memory_desc_create_with_tag(&w, 4, (dnnl_dims_t){64, 64, 3, 3}, dnnl_f32, dnnl_oihw));
  CK(dnnl_memory_desc_create_with_tag(&d, 4, (dnnl_dims_t){1, 64, 56, 56}, dnnl_f32, dnnl_nchw));
  CK(dnnl_memory_desc_create_with_tag(&sa, 4, (dnnl_dims_t){1, 64, 56, 56}, dnnl_f32,
                                      dnnl_format_tag_any));
  CK(dnnl_memory_desc_create_with_tag(&wa, 4, (dnnl_dims_t){64, 64, 3, 3}, dnnl_f32,
                                      dnnl_format_tag_any));
  CK(dnnl_memory_desc_create_with_tag(&da, 4, (dnnl_dims_t){1, 64, 56, 56}, dnnl_f32,
                                      dnnl_format_tag_any));
  CK(dnnl_convolution_forward_primitive_desc_create(
      &pd, eng, dnnl_forward_inference, dnnl_convolution_direct, sa, wa, NULL, da,
      (dnnl_dims_t){1, 1}, (dnnl_dims_t){0, 0}, (dnnl_dims_t){1, 1}, (dnnl_dims_t){1, 1}, NULL));
  CK(dnnl_memory_create(&u_src, s, eng, DNNL_MEMORY_ALLOCATE));
  CK(dnnl_memory_create(&u_wei, w, eng, DNNL_MEMORY_ALLOCATE));
  CK(dnnl_memory_create(&u_dst, d, eng, DNNL_MEMORY_ALLOCATE));
  CK(dnnl_memory_create(&c_src, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), eng,
                        DNNL_MEMORY_ALLOCATE));
  CK(dnnl_memory_create(&c_wei, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), eng,
                        DNNL_MEMORY_ALLOCATE));
  CK(dnnl_memory_create(&c_dst, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), eng,
                        DNNL_MEMORY_ALLOCATE));
  CK(dnnl_primitive_create(&conv, pd));
  if (make_reorder(u_src, c_src, &r_src) || make_reorder(u_wei, c_wei, &r_wei) ||
      make_reorder(c_dst, u_dst, &r_dst)) return -1;
  return 0;
}

static int reorder(dnnl_primitive_t r, dnnl_memory_t from, dnnl_memory_t to) {
  dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  CK(dnnl_primitive_execute(r, strm, 2, a));
  return 0;
}

/* direct_conv(iters) -> nanoseconds spent in `iters` calls (reorder in, conv, reorder out). */
TVM_FFI_DLL_EXPORT int __tvm_ffi_direct_conv(void* self, const TVMFFIAny* args, int32_t n,
                                             TVMFFIAny* result) {
  struct timespec t0, t1;
  dnnl_exec_arg_t ca[3];
  if (conv == NULL && setup() != 0) return -1;
  ca[0].arg = DNNL_ARG_SRC; ca[0].memory = c_src;
  ca[1].arg = DNNL_ARG_WEIGHTS; ca[1].memory = c_wei;
  ca[2].arg = DNNL_ARG_DST; ca[2].memory = c_dst;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int64_t i = 0; i < args[0].v_int64; ++i) {
    if (reorder(r_src, u_src, c_src) || reorder(r_wei, u_wei, c_wei)) return -1;
    CK(dnnl_primitive_execute(conv, strm, 3, ca));
    if (reorder(r_dst, c_dst, u_dst)) return -1;
    CK(dnnl_stream_wait(strm));
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec);
  return 0;
}
"""


def kiln_conv() -> tuple[object, np.ndarray, np.ndarray, np.ndarray]:
    """kiln's generated entry for the partitioned conv, checked against numpy, and its buffers."""
    low = LowerTE("bench")(PartitionForCompiler("dnnl")(Conv))
    (ext,) = low.get_attr("external_mods")
    lib = compile_c(ext.source, flags=(*DEFAULT_FLAGS, *ext.flags), name_hint="bench_dnnl")
    fn = tvm_ffi.load_module(str(lib))[ext.symbol]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, C, H, W)).astype("float32")
    w = (rng.standard_normal((O, C, K, K)) * 0.05).astype("float32")
    y = np.zeros((N, O, H, W), "float32")
    fn(x, w, y)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (K, K), axis=(2, 3))
    want = np.einsum("nchwij,ocij->nohw", win, w, optimize=True)
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-3)
    return fn, x, w, y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--iters", type=int, default=10)
    opts = parser.parse_args()
    dnnl.require()
    fn, x, w, y = kiln_conv()
    direct_lib = compile_c(DIRECT_C, flags=(*DEFAULT_FLAGS, *dnnl.flags()), name_hint="direct")
    direct = tvm_ffi.load_module(str(direct_lib))["direct_conv"]
    direct(5)
    for _ in range(5):
        fn(x, w, y)
    kiln_ms, direct_ms = [], []
    for _ in range(opts.rounds):
        start = time.perf_counter()
        for _ in range(opts.iters):
            fn(x, w, y)
        kiln_ms.append((time.perf_counter() - start) * 1e3 / opts.iters)
        direct_ms.append(direct(opts.iters) / 1e6 / opts.iters)
    k, d = statistics.median(kiln_ms), statistics.median(direct_ms)
    gflop = 2 * N * O * H * W * C * K * K / 1e9
    print(f"conv2d {N}x{C}x{H}x{W}, {O} {K}x{K} filters, padding 1 (float32)")
    print(f"  oneDNN called directly: {d:8.3f} ms  ({gflop / d * 1e3:6.1f} GFLOP/s)")
    print(f"  kiln dnnl partition:    {k:8.3f} ms  ({gflop / k * 1e3:6.1f} GFLOP/s)")
    ratio = statistics.median(a / b for a, b in zip(kiln_ms, direct_ms))
    print(f"  kiln / direct time, median of {opts.rounds} round pairs: {ratio:.3f} (bar: <= 1.10)")


if __name__ == "__main__":
    main()
