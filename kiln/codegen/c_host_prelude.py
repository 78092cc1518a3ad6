"""C helpers of host code: argument unpacking and checking for tvm-ffi entries, packed calls.

Every checking helper raises a Python exception through ``TVMFFIErrorSetRaisedFromCStr`` and
returns -1; its message names the function, the argument and what was expected and received,
e.g. ``main: argument A.shape[1] expected 128, got 64``. Kinds: wrong argument count, kind
(tensor vs scalar) or dtype raise ``TypeError``; wrong ndim, shape, strides, device, null data,
an out-of-range scalar, or overlapping arguments of a ``tir.noalias`` function (`_OVERLAP`: their
byte ranges intersect) raise ``ValueError``.
"""

from __future__ import annotations

from kiln.codegen.c_prelude import HELPERS

_FAIL = r"""
static int kiln_fail(const char* kind, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_format_error(kind, fmt, ap);
  va_end(ap);
  return -1;
}

static const char* kiln_kind_name(int32_t kind) {
  switch (kind) {
    case kTVMFFINone: return "None";
    case kTVMFFIInt: return "int";
    case kTVMFFIBool: return "bool";
    case kTVMFFIFloat: return "float";
    case kTVMFFIOpaquePtr: return "an opaque pointer";
    case kTVMFFIDataType: return "a dtype";
    case kTVMFFIDevice: return "a device";
    case kTVMFFIDLTensorPtr: case kTVMFFITensor: return "a tensor";
    case kTVMFFIRawStr: case kTVMFFISmallStr: case kTVMFFIStr: return "str";
    case kTVMFFIByteArrayPtr: case kTVMFFISmallBytes: case kTVMFFIBytes: return "bytes";
    case kTVMFFIFunction: return "a function";
    case kTVMFFIShape: return "a shape";
    case kTVMFFIArray: case kTVMFFIList: return "a list";
    case kTVMFFIMap: case kTVMFFIDict: return "a dict";
    case kTVMFFIModule: return "a module";
    default: return "an object";
  }
}
"""

_TENSOR = r"""
static void kiln_dtype_name(DLDataType t, char* out, size_t cap) {
  const char* named = NULL;
  const char* base = NULL;
  switch (t.code) {
    case kDLInt: base = "int"; break;
    case kDLUInt: base = "uint"; break;
    case kDLFloat: base = "float"; break;
    case kDLBfloat: base = "bfloat"; break;
    case kDLComplex: base = "complex"; break;
    case kDLBool: named = "bool"; break;
    case kDLFloat8_e4m3fn: named = "float8_e4m3fn"; break;
    case kDLFloat8_e5m2: named = "float8_e5m2"; break;
    case kDLOpaqueHandle: named = "handle"; break;
    default: snprintf(out, cap, "dtype(code=%d, bits=%d)", (int)t.code, (int)t.bits); return;
  }
  if (named != NULL) snprintf(out, cap, t.lanes > 1 ? "%sx%d" : "%s", named, (int)t.lanes);
  else snprintf(out, cap, t.lanes > 1 ? "%s%dx%d" : "%s%d", base, (int)t.bits, (int)t.lanes);
}

static int64_t kiln_numel(const DLTensor* t) {
  int64_t n = 1;
  for (int d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}

static void kiln_ints(const int64_t* v, int n, char* out, size_t cap) {
  size_t used = (size_t)snprintf(out, cap, "(");
  for (int d = 0; d < n && used < cap; ++d) {
    used += (size_t)snprintf(out + used, cap - used, d ? ", %lld" : "%lld", (long long)v[d]);
  }
  if (used < cap) snprintf(out + used, cap - used, n == 1 ? ",)" : ")");
}

/* args[i] as a tensor on `device` (kDLCPU, kDLCUDA) of dtype `want` and `ndim` dimensions
   with usable data. */
static int kiln_arg_tensor(const TVMFFIAny* args, int32_t i, const char* fn, const char* name,
                           DLDataType want, const char* want_name, int32_t ndim, int32_t device,
                           DLTensor** out) {
  int32_t kind = args[i].type_index;
  DLTensor* t;
  char got[64];
  if (kind == kTVMFFITensor) {
    t = (DLTensor*)((char*)args[i].v_obj + sizeof(TVMFFIObject));
  } else if (kind == kTVMFFIDLTensorPtr && args[i].v_ptr != NULL) {
    t = (DLTensor*)args[i].v_ptr;
  } else {
    return kiln_fail("TypeError", "%s: argument %s expected a tensor, got %s", fn, name,
                     kind == kTVMFFIDLTensorPtr ? "a NULL DLTensor*" : kiln_kind_name(kind));
  }
  if (t->dtype.code != want.code || t->dtype.bits != want.bits || t->dtype.lanes != want.lanes) {
    kiln_dtype_name(t->dtype, got, sizeof(got));
    return kiln_fail("TypeError", "%s: argument %s.dtype expected %s, got %s", fn, name,
                     want_name, got);
  }
  if (t->ndim != ndim) {
    return kiln_fail("ValueError", "%s: argument %s.ndim expected %d, got %d", fn, name,
                     (int)ndim, (int)t->ndim);
  }
  if (t->device.device_type != device) {
    return kiln_fail("ValueError", "%s: argument %s.device expected %s, got device type %d",
                     fn, name, device == kDLCUDA ? "cuda" : "cpu", (int)t->device.device_type);
  }
  if (t->data == NULL && kiln_numel(t) != 0) {
    return kiln_fail("ValueError", "%s: argument %s.data expected a non-null pointer, got NULL",
                     fn, name);
  }
  *out = t;
  return 0;
}

/* The error of kiln_check_compact (none for a tensor without elements: any strides will do). */
static int kiln_compact_error(const DLTensor* t, const char* fn, const char* name) {
  char strides[256], shape[256];
  if (kiln_numel(t) == 0) return 0;
  kiln_ints(t->strides, t->ndim, strides, sizeof(strides));
  kiln_ints(t->shape, t->ndim, shape, sizeof(shape));
  return kiln_fail("ValueError",
                   "%s: argument %s.strides expected a compact row-major layout, got strides "
                   "%s for shape %s (pass a contiguous array, e.g. numpy.ascontiguousarray)",
                   fn, name, strides, shape);
}

/* NOTE: inline, with the error out of line: it runs for every tensor of every kernel call. */
static inline int kiln_check_compact(const DLTensor* t, const char* fn, const char* name) {
  int64_t expect = 1;
  if (t->strides == NULL) return 0;
  for (int d = t->ndim - 1; d >= 0; --d) {
    if (t->shape[d] != 1 && t->strides[d] != expect) return kiln_compact_error(t, fn, name);
    expect *= t->shape[d];
  }
  return 0;
}

/* field 0: shape[axis]; 1: strides[axis] (row-major when absent); 2: elem_offset. */
static int64_t kiln_dim(const DLTensor* t, int field, int axis) {
  if (field == 0) return t->shape[axis];
  if (field == 2) {
    int64_t size = ((int64_t)t->dtype.bits * t->dtype.lanes + 7) / 8;
    return (int64_t)t->byte_offset / (size > 0 ? size : 1);
  }
  if (t->strides != NULL) return t->strides[axis];
  int64_t s = 1;
  for (int d = t->ndim - 1; d > axis; --d) s *= t->shape[d];
  return s;
}

static int kiln_check_dim(int64_t got, int64_t want, const char* fn, const char* what,
                          const char* note) {
  if (got == want) return 0;
  return kiln_fail("ValueError", "%s: argument %s expected %lld%s, got %lld", fn, what,
                   (long long)want, note, (long long)got);
}

static int kiln_bind_int(int64_t v, int64_t lo, int64_t hi, const char* fn, const char* what,
                         const char* var, const char* type) {
  if (v >= lo && v <= hi) return 0;
  return kiln_fail("ValueError", "%s: argument %s = %lld does not fit %s, the %s it defines", fn,
                   what, (long long)v, var, type);
}
"""

_SCALAR = r"""
static int kiln_arg_int(const TVMFFIAny* args, int32_t i, const char* fn, const char* name,
                        const char* type, int64_t lo, int64_t hi, int64_t* out) {
  int32_t kind = args[i].type_index;
  if (kind != kTVMFFIInt && kind != kTVMFFIBool) {
    return kiln_fail("TypeError", "%s: argument %s expected an int (%s), got %s", fn, name, type,
                     kiln_kind_name(kind));
  }
  if (args[i].v_int64 < lo || args[i].v_int64 > hi) {
    return kiln_fail("ValueError", "%s: argument %s = %lld does not fit %s", fn, name,
                     (long long)args[i].v_int64, type);
  }
  *out = args[i].v_int64;
  return 0;
}

static int kiln_arg_float(const TVMFFIAny* args, int32_t i, const char* fn, const char* name,
                          const char* type, double* out) {
  int32_t kind = args[i].type_index;
  if (kind == kTVMFFIFloat) {
    *out = args[i].v_float64;
  } else if (kind == kTVMFFIInt || kind == kTVMFFIBool) {
    *out = (double)args[i].v_int64;
  } else {
    return kiln_fail("TypeError", "%s: argument %s expected a float (%s), got %s", fn, name,
                     type, kiln_kind_name(kind));
  }
  return 0;
}

static int kiln_arg_bool(const TVMFFIAny* args, int32_t i, const char* fn, const char* name,
                         bool* out) {
  int32_t kind = args[i].type_index;
  if (kind != kTVMFFIBool && kind != kTVMFFIInt) {
    return kiln_fail("TypeError", "%s: argument %s expected a bool, got %s", fn, name,
                     kiln_kind_name(kind));
  }
  *out = args[i].v_int64 != 0;
  return 0;
}

static int kiln_arg_handle_any(const TVMFFIAny* args, int32_t i, const char* fn,
                               const char* name, void** out) {
  int32_t kind = args[i].type_index;
  if (kind == kTVMFFIOpaquePtr || kind == kTVMFFIDLTensorPtr) {
    *out = args[i].v_ptr;
    if (kind == kTVMFFIDLTensorPtr && *out != NULL) *out = ((DLTensor*)*out)->data;
  } else if (kind == kTVMFFINone) {
    *out = NULL;
  } else if (kind == kTVMFFITensor) {
    DLTensor* t = (DLTensor*)((char*)args[i].v_obj + sizeof(TVMFFIObject));
    *out = (char*)t->data + t->byte_offset;
  } else {
    return kiln_fail("TypeError", "%s: argument %s expected a pointer or tensor, got %s", fn,
                     name, kiln_kind_name(kind));
  }
  return 0;
}

/* NOTE: the common case (an opaque pointer: every call of a compiled-mode VM function) inline. */
static inline int kiln_arg_handle(const TVMFFIAny* args, int32_t i, const char* fn,
                                  const char* name, void** out) {
  if (args[i].type_index == kTVMFFIOpaquePtr) {
    *out = args[i].v_ptr;
    return 0;
  }
  return kiln_arg_handle_any(args, i, fn, name, out);
}
"""

_OVERLAP = r"""
/* The bytes [*lo, *hi) that tensor t reaches, from its lowest to past its highest element
   (strides may be negative or absent); *lo == *hi when it has no elements. */
static void kiln_byte_span(const DLTensor* t, uintptr_t* lo, uintptr_t* hi) {
  int64_t size = ((int64_t)t->dtype.bits * t->dtype.lanes + 7) / 8, low = 0, high = 0, step = 1;
  uintptr_t base = (uintptr_t)t->data + (uintptr_t)t->byte_offset;
  *lo = *hi = base;
  for (int d = t->ndim - 1; d >= 0; --d) {
    int64_t reach;
    if (t->shape[d] == 0) return;
    reach = (t->shape[d] - 1) * (t->strides != NULL ? t->strides[d] : step);
    if (reach < 0) low += reach; else high += reach;
    step *= t->shape[d];
  }
  *lo = base + (uintptr_t)(low * size);
  *hi = base + (uintptr_t)((high + 1) * size);
}

/* Arguments a and b of a noalias function (restrict pointers) must not share a byte. */
static int kiln_check_overlap(const DLTensor* a, const DLTensor* b, const char* fn,
                              const char* a_name, const char* b_name) {
  uintptr_t a_lo, a_hi, b_lo, b_hi;
  kiln_byte_span(a, &a_lo, &a_hi);
  kiln_byte_span(b, &b_lo, &b_hi);
  if (a_lo == a_hi || b_lo == b_hi || a_hi <= b_lo || b_hi <= a_lo) return 0;
  return kiln_fail("ValueError", "%s: arguments %s and %s overlap in memory; this kernel assumes "
                   "they do not (pass a copy of one of them, e.g. numpy.copy)", fn, a_name,
                   b_name);
}
"""

_PACKED_CALL = r"""
/* Call a global tvm-ffi function, looked up once and cached in *cache. */
static int kiln_call_global(void* volatile* cache, const char* name, TVMFFIAny* args,
                            int32_t n, TVMFFIAny* result) {
  void* f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (f == NULL) {
    TVMFFIByteArray bytes;
    TVMFFIObjectHandle h = NULL;
    void* expected = NULL;
    bytes.data = name;
    bytes.size = strlen(name);
    if (TVMFFIFunctionGetGlobal(&bytes, &h) != 0) return -1;
    if (h == NULL) {
      return kiln_fail("RuntimeError", "call_packed: no global function %s is registered", name);
    }
    if (__atomic_compare_exchange_n(cache, &expected, h, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      f = h;
    } else {
      TVMFFIObjectDecRef(h);
      f = expected;
    }
  }
  return TVMFFIFunctionCall(f, args, n, result);
}

static void kiln_any_release(TVMFFIAny* r) {
  if (r->type_index >= kTVMFFIStaticObjectBegin && r->v_obj != NULL) TVMFFIObjectDecRef(r->v_obj);
}
static int64_t kiln_any_int(TVMFFIAny* r) {
  if (r->type_index == kTVMFFIInt || r->type_index == kTVMFFIBool) return r->v_int64;
  if (r->type_index == kTVMFFIFloat) return (int64_t)r->v_float64;
  kiln_any_release(r);
  return 0;
}
static double kiln_any_float(TVMFFIAny* r) {
  if (r->type_index == kTVMFFIFloat) return r->v_float64;
  if (r->type_index == kTVMFFIInt || r->type_index == kTVMFFIBool) return (double)r->v_int64;
  kiln_any_release(r);
  return 0.0;
}
static void* kiln_any_ptr(TVMFFIAny* r) {
  if (r->type_index == kTVMFFIOpaquePtr) return r->v_ptr;
  kiln_any_release(r);
  return NULL;
}
static TVMFFIAny kiln_ptr_any(void* p) {
  TVMFFIAny a;
  a.type_index = p == NULL ? kTVMFFINone : kTVMFFIOpaquePtr;
  a.zero_padding = 0;
  a.v_ptr = p;
  return a;
}
"""

QUICK_VM_LINES = 1500
"""A compiled-mode VM function of more lines than this is compiled at ``-O1`` (`QUICK_COMPILE`):
GCC's time on one function grows faster than its length, and a VM function is calls and
any-list moves, which ``-O2`` does not speed up. Measured (GCC 12, Zen 3): the 2,000-op R script
of tests/relax/test_deep_graphs.py, one 4,000-line VM function, 22.1 s at ``-O2``, 8.9 s with
the attribute; ResNet-50's and GPT-2's VM functions (a few hundred lines) keep ``-O2``."""

QUICK_COMPILE = """#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("O1")))
#endif
"""
"""The prefix of such a function's definition (GCC only; clang has no per-function level)."""

HOST_HELPERS: dict[str, tuple[str, tuple[str, ...]]] = {
    **HELPERS,
    "fail": (_FAIL, ("format_error",)),
    "tensor_args": (_TENSOR, ("fail",)),
    "scalar_args": (_SCALAR, ("fail",)),
    "overlap_args": (_OVERLAP, ("fail",)),
    "packed_call": (_PACKED_CALL, ("fail",)),
}
"""The host code generator's helper table: the common helpers plus those above."""
