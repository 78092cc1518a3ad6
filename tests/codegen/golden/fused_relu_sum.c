#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <tvm/ffi/c_api.h>

static int kiln_fail(const char* kind, const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  TVMFFIErrorSetRaisedFromCStr(kind, msg);
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

static int kiln_check_compact(const DLTensor* t, const char* fn, const char* name) {
  int64_t expect = 1;
  char strides[256], shape[256];
  if (t->strides == NULL || kiln_numel(t) == 0) return 0;
  for (int d = t->ndim - 1; d >= 0; --d) {
    if (t->shape[d] != 1 && t->strides[d] != expect) {
      kiln_ints(t->strides, t->ndim, strides, sizeof(strides));
      kiln_ints(t->shape, t->ndim, shape, sizeof(shape));
      return kiln_fail("ValueError",
                       "%s: argument %s.strides expected a compact row-major layout, got strides "
                       "%s for shape %s (pass a contiguous array, e.g. numpy.ascontiguousarray)",
                       fn, name, strides, shape);
    }
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

static inline float kiln_max_float32(float a, float b) { return a > b ? a : b; }
static int32_t fused(float* restrict x_data, float* restrict a_data, float* restrict b_data, float* restrict T_sum_data);
static int32_t fused_par(int32_t c_1, float* restrict x_data, float* restrict a_data, float* restrict b_data, float* restrict T_sum_rf_data);

static int32_t fused(float* restrict x_data, float* restrict a_data, float* restrict b_data, float* restrict T_sum_data) {
  float T_sum_rf_data[64] __attribute__((aligned(64)));
  #pragma omp parallel for schedule(static)
  for (int32_t c_1 = 0; c_1 < 4; ++c_1) {
    fused_par(c_1, x_data, a_data, b_data, T_sum_rf_data);
  }
  T_sum_data[0] = 0.0f;
  for (int32_t rc = 0; rc < 4; ++rc) {
    for (int32_t rl = 0; rl < 16; ++rl) {
      T_sum_data[0] = (T_sum_data[0] + T_sum_rf_data[((rc * 16) + rl)]);
    }
  }
  return 0;
}

static int32_t fused_par(int32_t c_1, float* restrict x_data, float* restrict a_data, float* restrict b_data, float* restrict T_sum_rf_data) {
  float T_sum_rf_local_data[16] __attribute__((aligned(64)));
  #pragma omp simd
  for (int32_t l_init = 0; l_init < 16; ++l_init) {
    T_sum_rf_local_data[l_init] = 0.0f;
  }
  for (int32_t k0_o = 0; k0_o < 1024; ++k0_o) {
    #pragma omp simd
    for (int32_t l = 0; l < 16; ++l) {
      T_sum_rf_local_data[l] = (T_sum_rf_local_data[l] + kiln_max_float32(((x_data[(((c_1 * 16384) + (k0_o * 16)) + l)] * a_data[0]) + b_data[0]), 0.0f));
    }
  }
  #pragma omp simd
  for (int32_t l_1 = 0; l_1 < 16; ++l_1) {
    T_sum_rf_data[((c_1 * 16) + l_1)] = T_sum_rf_local_data[l_1];
  }
  return 0;
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_fused(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)self;
  if (num_args != 4) {
    return kiln_fail("TypeError", "fused: expected 4 arguments (x, a, b, T_sum), got %d", (int)num_args);
  }
  DLTensor* x_tensor;
  if (kiln_arg_tensor(args, 0, "fused", "x", (DLDataType){2, 32, 1}, "float32", 1, 1, &x_tensor) != 0) return -1;
  DLTensor* a_tensor;
  if (kiln_arg_tensor(args, 1, "fused", "a", (DLDataType){2, 32, 1}, "float32", 1, 1, &a_tensor) != 0) return -1;
  DLTensor* b_tensor;
  if (kiln_arg_tensor(args, 2, "fused", "b", (DLDataType){2, 32, 1}, "float32", 1, 1, &b_tensor) != 0) return -1;
  DLTensor* T_sum_tensor;
  if (kiln_arg_tensor(args, 3, "fused", "T_sum", (DLDataType){2, 32, 1}, "float32", 0, 1, &T_sum_tensor) != 0) return -1;
  if (kiln_check_compact(x_tensor, "fused", "x") != 0) return -1;
  if (kiln_check_compact(a_tensor, "fused", "a") != 0) return -1;
  if (kiln_check_compact(b_tensor, "fused", "b") != 0) return -1;
  if (kiln_check_compact(T_sum_tensor, "fused", "T_sum") != 0) return -1;
  if (kiln_check_dim(kiln_dim(x_tensor, 0, 0), (int64_t)65536, "fused", "x.shape[0]", "") != 0) return -1;
  if (kiln_check_dim(kiln_dim(a_tensor, 0, 0), (int64_t)1, "fused", "a.shape[0]", "") != 0) return -1;
  if (kiln_check_dim(kiln_dim(b_tensor, 0, 0), (int64_t)1, "fused", "b.shape[0]", "") != 0) return -1;
  float* x_data = (float*)((char*)x_tensor->data + x_tensor->byte_offset);
  float* a_data = (float*)((char*)a_tensor->data + a_tensor->byte_offset);
  float* b_data = (float*)((char*)b_tensor->data + b_tensor->byte_offset);
  float* T_sum_data = (float*)((char*)T_sum_tensor->data + T_sum_tensor->byte_offset);
  return fused(x_data, a_data, b_data, T_sum_data);
}


/* kiln metadata: the exposed functions of this library (see kiln/runtime/module.py). */
#include <tvm/ffi/c_api.h>
#ifdef __cplusplus
extern "C"
#endif
TVM_FFI_DLL_EXPORT int __tvm_ffi___kiln_func_names(void* self, const TVMFFIAny* args,
                                                int32_t num_args, TVMFFIAny* result) {
  static const char names[] = "fused";
  TVMFFIByteArray bytes;
  (void)self;
  (void)args;
  if (num_args != 0) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "__kiln_func_names takes no arguments");
    return -1;
  }
  bytes.data = names;
  bytes.size = sizeof(names) - 1;
  return TVMFFIStringFromByteArray(&bytes, result);
}
