"""The C text every generated file starts with, and the helpers it pulls in on demand.

`Prelude` records which helpers and vector typedefs the emitted code used, and renders only those
(in dependency order), so a small kernel stays a small file. Every helper name starts with
``kiln_`` (reserved by `kiln.codegen.names`).

Storage-only float types (float16, bfloat16, float8_e4m3fn, float8_e5m2) live in memory as
``uint16_t`` / ``uint8_t`` bit patterns; their *values* are C ``float``s that always hold a number
the type can represent (every arithmetic result is rounded through ``kiln_round_<suffix>``), so
results match per-operation rounding as numpy / ml_dtypes do it.
"""

from __future__ import annotations

from kiln.ir.dtype import DataType

INCLUDES = """\
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <tvm/ffi/c_api.h>
"""

_SMALL_FLOAT = r"""
/* Small IEEE-like floats: 1 sign bit, e exponent bits, m mantissa bits; `finite` types
   (float8_e4m3fn) have no infinity and one NaN pattern per sign. Rounding is to nearest even. */
static inline float kiln_small_to_f32(uint32_t code, int e, int m, int finite) {
  uint32_t emask = (1u << e) - 1u, mmask = (1u << m) - 1u;
  uint32_t ex = (code >> m) & emask, man = code & mmask;
  int bias = (1 << (e - 1)) - 1;
  float v;
  if (ex == 0) {
    v = ldexpf((float)man, 1 - bias - m);
  } else if (!finite && ex == emask) {
    v = man ? NAN : INFINITY;
  } else if (finite && ex == emask && man == mmask) {
    v = NAN;
  } else {
    v = ldexpf((float)(man | (1u << m)), (int)ex - bias - m);
  }
  return ((code >> (e + m)) & 1u) ? -v : v;
}

static inline uint32_t kiln_f32_to_small(float f, int e, int m, int finite) {
  uint32_t sign = signbit(f) ? (1u << (e + m)) : 0u;
  uint32_t emask = (1u << e) - 1u;
  uint32_t nan_code = finite ? ((1u << (e + m)) - 1u) : ((emask << m) | (1u << (m - 1)));
  uint32_t max_code = finite ? ((1u << (e + m)) - 2u) : (((emask - 1u) << m) | ((1u << m) - 1u));
  int bias = (1 << (e - 1)) - 1, emin = 1 - bias, ex;
  float a = fabsf(f);
  if (isnan(f)) return sign | nan_code;
  if (a == 0.0f) return sign;
  if (isinf(f)) return sign | (finite ? nan_code : (emask << m));
  frexpf(a, &ex);
  ex = ex - 1 < emin ? emin : ex - 1;       /* a = q * 2^(ex - m) with q in quanta */
  double q = rint((double)ldexpf(a, m - ex));
  double code = ldexp(1.0, m) * (double)(ex + bias - 1) + q;
  if (code > (double)max_code) return sign | (finite ? nan_code : (emask << m));
  return sign | (uint32_t)code;
}
"""

_F16 = r"""
static inline float kiln_f16_to_f32(uint16_t v) { return kiln_small_to_f32(v, 5, 10, 0); }
static inline uint16_t kiln_f32_to_f16(float f) { return (uint16_t)kiln_f32_to_small(f, 5, 10, 0); }
static inline float kiln_round_f16(float f) { return kiln_f16_to_f32(kiln_f32_to_f16(f)); }
"""

_BF16 = r"""
static inline float kiln_bf16_to_f32(uint16_t v) {
  uint32_t u = (uint32_t)v << 16;
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}
static inline uint16_t kiln_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  if (isnan(f)) return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static inline float kiln_round_bf16(float f) { return kiln_bf16_to_f32(kiln_f32_to_bf16(f)); }
"""

_FP8 = r"""
static inline float kiln_e4m3fn_to_f32(uint8_t v) { return kiln_small_to_f32(v, 4, 3, 1); }
static inline uint8_t kiln_f32_to_e4m3fn(float f) { return (uint8_t)kiln_f32_to_small(f, 4, 3, 1); }
static inline float kiln_round_e4m3fn(float f) { return kiln_e4m3fn_to_f32(kiln_f32_to_e4m3fn(f)); }
static inline float kiln_e5m2_to_f32(uint8_t v) { return kiln_small_to_f32(v, 5, 2, 0); }
static inline uint8_t kiln_f32_to_e5m2(float f) { return (uint8_t)kiln_f32_to_small(f, 5, 2, 0); }
static inline float kiln_round_e5m2(float f) { return kiln_e5m2_to_f32(kiln_f32_to_e5m2(f)); }
"""

_ALLOC = r"""
/* Scratch memory: 64-byte aligned, size rounded up so aligned_alloc accepts it. */
static void* kiln_alloc(int64_t nbytes, const char* func, const char* name) {
  size_t size = nbytes > 0 ? (size_t)nbytes : 1u;
  size = (size + 63u) & ~(size_t)63u;
  void* p = aligned_alloc(64, size);
  if (p == NULL) {
    char msg[256];
    snprintf(msg, sizeof(msg), "%s: cannot allocate %lld bytes for %s", func,
             (long long)nbytes, name);
    TVMFFIErrorSetRaisedFromCStr("MemoryError", msg);
  }
  return p;
}
"""

_RAISE = r"""
static void kiln_raise(const char* kind, const char* msg) {
  TVMFFIErrorSetRaisedFromCStr(kind, msg);
}
"""

_FORMAT_ERROR = r"""
/* Raise a `kind` error with a printf-formatted message (shared by the formatted raises). */
static void kiln_format_error(const char* kind, const char* fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof(msg), fmt, ap);
  TVMFFIErrorSetRaisedFromCStr(kind, msg);
}
"""

_RAISE_FMT = r"""
static void kiln_raise_fmt(const char* kind, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_format_error(kind, fmt, ap);
  va_end(ap);
}
"""

_PARALLEL_ERRORS = r"""
/* Errors inside an OpenMP region: the raising thread moves its error out of its thread-local slot
   into a shared one (first error wins); the thread that started the region raises it again. */
static void kiln_par_capture(void* volatile* slot) {
  TVMFFIObjectHandle err = NULL;
  void* expected = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  if (err == NULL) return;
  if (!__atomic_compare_exchange_n(slot, &expected, err, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    TVMFFIObjectDecRef(err);
  }
}
static void kiln_par_reraise(void* err) {
  TVMFFIErrorSetRaised(err);
  TVMFFIObjectDecRef(err);
}
"""

_PENDING = r"""
/* Set when a function that returns a value (and so cannot return an error code) raised. */
static _Thread_local int kiln_error_pending = 0;
"""

_THREAD_POOL = r"""
/* kiln's thread pool (kiln/runtime/thread_pool.c), found once through the tvm-ffi global
   kiln.runtime.thread_pool; without it, parallel loops run on the calling thread. */
typedef void (*kiln_range_fn)(void*, int64_t, int64_t);
typedef void (*kiln_pool_fn)(int64_t, int64_t, kiln_range_fn, void*);
static void kiln_pool_serial(int64_t n, int64_t grain, kiln_range_fn f, void* c) {
  (void)grain;
  if (n > 0) f(c, 0, n);
}
static kiln_pool_fn kiln_pool_find(void) {
  static kiln_pool_fn cached = NULL;
  kiln_pool_fn p = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
  if (p != NULL) return p;
  p = kiln_pool_serial;
  TVMFFIByteArray name = {"kiln.runtime.thread_pool", 24};
  TVMFFIObjectHandle f = NULL;
  if (TVMFFIFunctionGetGlobal(&name, &f) == 0 && f != NULL) {
    TVMFFIAny r;
    r.type_index = kTVMFFINone;
    r.v_int64 = 0;
    if (TVMFFIFunctionCall(f, NULL, 0, &r) == 0) {
      if ((r.type_index == kTVMFFIInt || r.type_index == kTVMFFIOpaquePtr) && r.v_int64 != 0) {
        p = (kiln_pool_fn)(intptr_t)r.v_int64;
      }
    }
    TVMFFIObjectDecRef(f);
  }
  if (p == kiln_pool_serial) {
    TVMFFIObjectHandle err = NULL;
    TVMFFIErrorMoveFromRaised(&err); /* the pool is an optimization: drop its error */
    if (err != NULL) TVMFFIObjectDecRef(err);
  }
  __atomic_store_n(&cached, p, __ATOMIC_RELEASE);
  return p;
}
static void kiln_pool_launch(int64_t n, int64_t grain, kiln_range_fn f, void* c) {
  if (n <= 1 || n < grain) {
    if (n > 0) f(c, 0, n);
    return;
  }
  kiln_pool_find()(n, grain, f, c);
}
"""

HELPERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "small_float": (_SMALL_FLOAT, ()),
    "f16": (_F16, ("small_float",)),
    "bf16": (_BF16, ()),
    "fp8": (_FP8, ("small_float",)),
    "alloc": (_ALLOC, ()),
    "raise": (_RAISE, ()),
    "format_error": (_FORMAT_ERROR, ()),
    "raise_fmt": (_RAISE_FMT, ("format_error",)),
    "parallel_errors": (_PARALLEL_ERRORS, ()),
    "pending": (_PENDING, ()),
    "thread_pool": (_THREAD_POOL, ()),
}
"""name -> (C text, names of helpers it needs)."""

STORAGE_FLOAT_SUFFIX = {
    "float16": "f16",
    "bfloat16": "bf16",
    "float8_e4m3fn": "e4m3fn",
    "float8_e5m2": "e5m2",
}
"""Storage-only float kinds -> the suffix of their conversion helpers."""

_SUFFIX_HELPER = {"f16": "f16", "bf16": "bf16", "e4m3fn": "fp8", "e5m2": "fp8"}


def storage_float_suffix(dtype: DataType) -> str | None:
    """``f16``/``bf16``/``e4m3fn``/``e5m2`` for a storage-only float type, else None."""
    return STORAGE_FLOAT_SUFFIX.get(str(dtype.element_of()))


class Prelude:
    """The helpers, per-type functions and vector typedefs one generated file needs."""

    def __init__(self, helpers: dict[str, tuple[str, tuple[str, ...]]] | None = None) -> None:
        self.helpers = HELPERS if helpers is None else helpers
        self._helpers: dict[str, None] = {}
        self._extra: dict[str, str] = {}
        self._typedefs: dict[str, str] = {}

    def need(self, name: str) -> None:
        """Include helper ``name`` (and what it depends on) in the output."""
        if name in self._helpers:
            return
        for dep in self.helpers[name][1]:
            self.need(dep)
        self._helpers[name] = None

    def need_storage_float(self, dtype: DataType) -> str:
        """Include the conversion helpers of a storage-only float; returns their suffix."""
        suffix = storage_float_suffix(dtype)
        assert suffix is not None, dtype
        self.need(_SUFFIX_HELPER[suffix])
        return suffix

    def need_function(self, name: str, text: str) -> str:
        """Include a generated helper function (e.g. ``kiln_floordiv_int32``) once."""
        self._extra.setdefault(name, text)
        return name

    def need_typedef(self, name: str, text: str) -> str:
        self._typedefs.setdefault(name, text)
        return name

    def render(self) -> str:
        parts = [INCLUDES]
        if self._typedefs:
            parts.append("\n".join(self._typedefs.values()) + "\n")
        parts.extend(self.helpers[name][0] for name in self._helpers)
        if self._extra:
            parts.append("\n" + "\n".join(self._extra.values()))
        return "".join(parts)
