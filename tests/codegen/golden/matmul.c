#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <tvm/ffi/c_api.h>
typedef float float32x8 __attribute__((vector_size(32)));
typedef float32x8 kiln_float32x8_u __attribute__((aligned(4)));

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

static int32_t matmul(float* restrict x_data, float* restrict w_data, float* restrict matmul_data);

static int32_t matmul(float* restrict x_data, float* restrict w_data, float* restrict matmul_data) {
  for (int32_t i0_outer = 0; i0_outer < 6; ++i0_outer) {
    for (int32_t i1_outer = 0; i1_outer < 3; ++i1_outer) {
      float matmul_local_data[96] __attribute__((aligned(64)));
      #pragma GCC unroll 6
      for (int32_t i0_init = 0; i0_init < 6; ++i0_init) {
        if ((((i0_outer * 6) + i0_init) < 32)) {
          *(kiln_float32x8_u*)(matmul_local_data + (i0_init * 16)) = ({ float kiln_t1 = 0.0f; (float32x8){kiln_t1, kiln_t1, kiln_t1, kiln_t1, kiln_t1, kiln_t1, kiln_t1, kiln_t1}; });
          *(kiln_float32x8_u*)(matmul_local_data + ((i0_init * 16) + 8)) = ({ float kiln_t2 = 0.0f; (float32x8){kiln_t2, kiln_t2, kiln_t2, kiln_t2, kiln_t2, kiln_t2, kiln_t2, kiln_t2}; });
        }
      }
      for (int32_t k = 0; k < 64; ++k) {
        #pragma GCC unroll 6
        for (int32_t i0 = 0; i0 < 6; ++i0) {
          if ((((i0_outer * 6) + i0) < 32)) {
            *(kiln_float32x8_u*)(matmul_local_data + (i0 * 16)) = ((*(kiln_float32x8_u*)(matmul_local_data + (i0 * 16))) + (({ float kiln_t3 = x_data[(((i0_outer * 384) + (i0 * 64)) + k)]; (float32x8){kiln_t3, kiln_t3, kiln_t3, kiln_t3, kiln_t3, kiln_t3, kiln_t3, kiln_t3}; }) * (*(kiln_float32x8_u*)(w_data + ((k * 48) + (i1_outer * 16))))));
            *(kiln_float32x8_u*)(matmul_local_data + ((i0 * 16) + 8)) = ((*(kiln_float32x8_u*)(matmul_local_data + ((i0 * 16) + 8))) + (({ float kiln_t4 = x_data[(((i0_outer * 384) + (i0 * 64)) + k)]; (float32x8){kiln_t4, kiln_t4, kiln_t4, kiln_t4, kiln_t4, kiln_t4, kiln_t4, kiln_t4}; }) * (*(kiln_float32x8_u*)(w_data + (((k * 48) + (i1_outer * 16)) + 8)))));
          }
        }
      }
      #pragma GCC unroll 6
      for (int32_t i0_inner = 0; i0_inner < 6; ++i0_inner) {
        if ((((i0_outer * 6) + i0_inner) < 32)) {
          *(kiln_float32x8_u*)(matmul_data + (((i0_outer * 288) + (i0_inner * 48)) + (i1_outer * 16))) = (*(kiln_float32x8_u*)(matmul_local_data + (i0_inner * 16)));
          *(kiln_float32x8_u*)(matmul_data + ((((i0_outer * 288) + (i0_inner * 48)) + (i1_outer * 16)) + 8)) = (*(kiln_float32x8_u*)(matmul_local_data + ((i0_inner * 16) + 8)));
        }
      }
    }
  }
  return 0;
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_matmul(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)self;
  if (num_args != 3) {
    return kiln_fail("TypeError", "matmul: expected 3 arguments (x, w, matmul), got %d", (int)num_args);
  }
  DLTensor* x_tensor;
  if (kiln_arg_tensor(args, 0, "matmul", "x", (DLDataType){2, 32, 1}, "float32", 2, 1, &x_tensor) != 0) return -1;
  DLTensor* w_tensor;
  if (kiln_arg_tensor(args, 1, "matmul", "w", (DLDataType){2, 32, 1}, "float32", 2, 1, &w_tensor) != 0) return -1;
  DLTensor* matmul_tensor;
  if (kiln_arg_tensor(args, 2, "matmul", "matmul", (DLDataType){2, 32, 1}, "float32", 2, 1, &matmul_tensor) != 0) return -1;
  if (kiln_check_compact(x_tensor, "matmul", "x") != 0) return -1;
  if (kiln_check_compact(w_tensor, "matmul", "w") != 0) return -1;
  if (kiln_check_compact(matmul_tensor, "matmul", "matmul") != 0) return -1;
  if (kiln_check_dim(kiln_dim(x_tensor, 0, 0), (int64_t)32, "matmul", "x.shape[0]", "") != 0) return -1;
  if (kiln_check_dim(kiln_dim(x_tensor, 0, 1), (int64_t)64, "matmul", "x.shape[1]", "") != 0) return -1;
  if (kiln_check_dim(kiln_dim(w_tensor, 0, 0), (int64_t)64, "matmul", "w.shape[0]", "") != 0) return -1;
  if (kiln_check_dim(kiln_dim(w_tensor, 0, 1), (int64_t)48, "matmul", "w.shape[1]", "") != 0) return -1;
  if (kiln_check_dim(kiln_dim(matmul_tensor, 0, 0), (int64_t)32, "matmul", "matmul.shape[0]", "") != 0) return -1;
  if (kiln_check_dim(kiln_dim(matmul_tensor, 0, 1), (int64_t)48, "matmul", "matmul.shape[1]", "") != 0) return -1;
  float* x_data = (float*)((char*)x_tensor->data + x_tensor->byte_offset);
  float* w_data = (float*)((char*)w_tensor->data + w_tensor->byte_offset);
  float* matmul_data = (float*)((char*)matmul_tensor->data + matmul_tensor->byte_offset);
  return matmul(x_data, w_data, matmul_data);
}


/* kiln metadata: the exposed functions of this library (see kiln/runtime/module.py). */
#include <tvm/ffi/c_api.h>
#ifdef __cplusplus
extern "C"
#endif
TVM_FFI_DLL_EXPORT int __tvm_ffi___kiln_func_names(void* self, const TVMFFIAny* args,
                                                int32_t num_args, TVMFFIAny* result) {
  static const char names[] = "matmul";
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
