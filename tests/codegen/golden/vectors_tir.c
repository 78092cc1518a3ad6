#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <tvm/ffi/c_api.h>
typedef float float32x4 __attribute__((vector_size(16)));
typedef float32x4 kiln_float32x4_u __attribute__((aligned(4)));
typedef int32_t int32x4 __attribute__((vector_size(16)));
typedef float float32x16 __attribute__((vector_size(64)));
typedef float32x16 kiln_float32x16_u __attribute__((aligned(4)));

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

static int kiln_arg_int(const TVMFFIAny* args, int32_t i, const char* fn, const char* name,
                        const char* type, int64_t lo, int64_t hi, int64_t* out) {
  int32_t kind = args[i].type_index;
  if (kind != kTVMFFIInt && kind != kTVMFFIBool) {
    return kiln_fail("TypeError", "%s: argument %s expected an int (%s), got %s", fn, name, type,
                     kiln_kind_name(kind));
  }
  if (args[i].v_int64 < lo || args[i].v_int64 > hi) {
    return kiln_fail("ValueError", "%s: argument %s = %lld is out of range for %s", fn, name,
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

static int kiln_arg_handle(const TVMFFIAny* args, int32_t i, const char* fn, const char* name,
                           void** out) {
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

static int32_t vectors(float* A_data, float* B_data, int32_t n);

static int32_t vectors(float* A_data, float* B_data, int32_t n) {
  *(kiln_float32x4_u*)(A_data + 0) = ((*(kiln_float32x4_u*)(A_data + 4)) + ({ float kiln_t1 = 1.0f; (float32x4){kiln_t1, kiln_t1, kiln_t1, kiln_t1}; }));
  *(kiln_float32x4_u*)(A_data + 8) = ((*(kiln_float32x4_u*)(A_data + 12)) * ({ float kiln_t2 = A_data[0]; (float32x4){kiln_t2, kiln_t2, kiln_t2, kiln_t2}; }));
  *(kiln_float32x4_u*)(A_data + (n * 4)) = (*(kiln_float32x4_u*)(A_data + 0));
  { __auto_type kiln_i6 = (((int32x4){0, 1, 2, 3} * 2) + 16); __auto_type kiln_v7 = ({ __auto_type kiln_t4 = (((int32x4){0, 1, 2, 3} * 2) + 32); float32x4 kiln_r5; for (int kiln_l3 = 0; kiln_l3 < 4; ++kiln_l3) kiln_r5[kiln_l3] = A_data[kiln_t4[kiln_l3]]; kiln_r5; }); for (int kiln_l8 = 0; kiln_l8 < 4; ++kiln_l8) A_data[kiln_i6[kiln_l8]] = kiln_v7[kiln_l8]; }
  *(kiln_float32x16_u*)(B_data + (n * 16)) = (*(kiln_float32x16_u*)(B_data + 0));
  #pragma omp simd
  for (int32_t i = 0; i < 4; ++i) {
    A_data[(i + 40)] = 0.0f;
  }
  return 0;
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_vectors(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)self;
  if (num_args != 3) {
    return kiln_fail("TypeError", "vectors: expected 3 arguments (A, B, n), got %d", (int)num_args);
  }
  DLTensor* A_tensor;
  if (kiln_arg_tensor(args, 0, "vectors", "A", (DLDataType){2, 32, 1}, "float32", 1, 1, &A_tensor) != 0) return -1;
  DLTensor* B_tensor;
  if (kiln_arg_tensor(args, 1, "vectors", "B", (DLDataType){2, 32, 1}, "float32", 2, 1, &B_tensor) != 0) return -1;
  int64_t kiln_a9;
  if (kiln_arg_int(args, 2, "vectors", "n", "int32", (-2147483647LL - 1), 2147483647LL, &kiln_a9) != 0) return -1;
  int32_t n = (int32_t)kiln_a9;
  if (kiln_check_compact(A_tensor, "vectors", "A") != 0) return -1;
  if (kiln_check_compact(B_tensor, "vectors", "B") != 0) return -1;
  if (kiln_check_dim(kiln_dim(A_tensor, 0, 0), (int64_t)64, "vectors", "A.shape[0]", "") != 0) return -1;
  if (kiln_check_dim(kiln_dim(B_tensor, 0, 0), (int64_t)8, "vectors", "B.shape[0]", "") != 0) return -1;
  if (kiln_check_dim(kiln_dim(B_tensor, 0, 1), (int64_t)16, "vectors", "B.shape[1]", "") != 0) return -1;
  float* A_data = (float*)((char*)A_tensor->data + A_tensor->byte_offset);
  float* B_data = (float*)((char*)B_tensor->data + B_tensor->byte_offset);
  return vectors(A_data, B_data, n);
}


/* kiln metadata: the exposed functions of this library (see kiln/runtime/module.py). */
#include <tvm/ffi/c_api.h>
#ifdef __cplusplus
extern "C"
#endif
TVM_FFI_DLL_EXPORT int __tvm_ffi___kiln_func_names(void* self, const TVMFFIAny* args,
                                                int32_t num_args, TVMFFIAny* result) {
  static const char names[] = "vectors";
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
