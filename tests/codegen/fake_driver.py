"""A fake ``libcuda.so.1`` for exercising kiln's launch path on machines without a GPU.

"Device memory" is host memory (cuMemAlloc is malloc), so copies are memcpy. cuLaunchKernel logs
every launch (kernel name, grid, block, dynamic shared memory) to ``$KILN_FAKE_CUDA_LOG`` and
emulates ``vadd_kernel`` and ``reverse_kernel`` of `tests.codegen.cuda_kernels` on the host, so a
test sees whether arguments, grid and block arrived as the kernel expects.
``KILN_FAKE_CUDA_NO_DEVICE`` makes cuInit fail as it does on a machine with a driver and no GPU.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

FAKE_LIBCUDA_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
static __thread void* current = NULL;
static void* const primary = (void*)0x1000;

static void note(const char* fmt, const char* name, unsigned a, unsigned b, unsigned c,
                 unsigned d, unsigned e, unsigned f, unsigned g) {
  const char* path = getenv("KILN_FAKE_CUDA_LOG");
  FILE* out = path ? fopen(path, "a") : NULL;
  if (out == NULL) return;
  fprintf(out, fmt, name, a, b, c, d, e, f, g);
  fclose(out);
}

CUresult cuInit(unsigned flags) {
  (void)flags;
  return getenv("KILN_FAKE_CUDA_NO_DEVICE") ? 100 : 0;
}
CUresult cuDeviceGetCount(int* n) { *n = 1; return 0; }
CUresult cuDeviceGet(int* d, int i) { *d = i; return 0; }
CUresult cuDevicePrimaryCtxRetain(void** ctx, int d) { (void)d; *ctx = primary; return 0; }
CUresult cuCtxGetCurrent(void** ctx) { *ctx = current; return 0; }
CUresult cuCtxSetCurrent(void* ctx) { current = ctx; return 0; }
CUresult cuCtxPushCurrent_v2(void* ctx) { current = ctx; return 0; }
CUresult cuCtxPopCurrent_v2(void** ctx) { if (ctx) *ctx = current; current = NULL; return 0; }
CUresult cuCtxSynchronize(void) { return current == primary ? 0 : 201; }
CUresult cuModuleLoadData(void** mod, const void* image) {
  if (current != primary) return 201; /* CUDA_ERROR_INVALID_CONTEXT */
  if (memcmp(image, "\x7f" "ELF", 4) != 0) return 200; /* CUDA_ERROR_INVALID_IMAGE */
  *mod = (void*)image;
  return 0;
}
CUresult cuModuleGetFunction(void** f, void* mod, const char* name) {
  (void)mod;
  *f = strdup(name);
  return 0;
}
CUresult cuFuncSetAttribute(void* f, int attr, int value) {
  note("attribute %s %u %u\n", (const char*)f, (unsigned)attr, (unsigned)value, 0, 0, 0, 0, 0);
  return 0;
}
CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned smem, void* stream, void** params, void** extra) {
  const char* name = (const char*)f;
  (void)stream;
  (void)extra;
  if (current != primary) return 201;
  note("launch %s grid=%u,%u,%u block=%u,%u,%u smem=%u\n", name, gx, gy, gz, bx, by, bz, smem);
  if (strcmp(name, "vadd_kernel") == 0) {
    float* a = *(float**)params[0];
    float* b = *(float**)params[1];
    float* c = *(float**)params[2];
    int n = *(int*)params[3];
    for (unsigned i = 0; i < gx * bx; ++i) if ((int)i < n) c[i] = a[i] + b[i];
  } else if (strcmp(name, "reverse_kernel") == 0) {
    float* x = *(float**)params[0];
    float* y = *(float**)params[1];
    for (unsigned blk = 0; blk < gx; ++blk)
      for (unsigned t = 0; t < bx; ++t) y[blk * bx + t] = x[blk * bx + (bx - 1 - t)];
  }
  return 0;
}
CUresult cuMemAlloc_v2(unsigned long long* p, size_t n) {
  *p = (unsigned long long)(size_t)malloc(n);
  return *p ? 0 : 2;
}
CUresult cuMemFree_v2(unsigned long long p) { free((void*)(size_t)p); return 0; }
CUresult cuMemcpyHtoD_v2(unsigned long long d, const void* s, size_t n) {
  memcpy((void*)(size_t)d, s, n);
  return 0;
}
CUresult cuMemcpyDtoH_v2(void* d, unsigned long long s, size_t n) {
  memcpy(d, (void*)(size_t)s, n);
  return 0;
}
CUresult cuMemcpyDtoD_v2(unsigned long long d, unsigned long long s, size_t n) {
  memcpy((void*)(size_t)d, (void*)(size_t)s, n);
  return 0;
}
CUresult cuGetErrorName(CUresult r, const char** s) {
  *s = r == 100 ? "CUDA_ERROR_NO_DEVICE" : r == 200 ? "CUDA_ERROR_INVALID_IMAGE" : "CUDA_ERROR";
  return 0;
}
CUresult cuGetErrorString(CUresult r, const char** s) {
  *s = r == 100 ? "no CUDA-capable device is detected" : "fake error";
  return 0;
}
"""


def build_fake_libcuda(directory: Path) -> Path:
    """Compile the fake driver as ``directory/libcuda.so.1``; returns the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    src = directory / "fake_libcuda.c"
    src.write_text(FAKE_LIBCUDA_C)
    cmd = ["cc", "-shared", "-fPIC", "-O1", str(src), "-o", str(directory / "libcuda.so.1")]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return directory
