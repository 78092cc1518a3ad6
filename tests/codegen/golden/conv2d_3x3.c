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

static int32_t conv2d(float* restrict x_data, float* restrict w_data, float* restrict conv2d_nchw_data);
static int32_t conv2d_par(int32_t n_o_fused, float* restrict conv2d_nchw_data, float* restrict conv2d_nchw_pad_data, float* restrict w_data);

static int32_t conv2d(float* restrict x_data, float* restrict w_data, float* restrict conv2d_nchw_data) {
  float conv2d_nchw_pad_data[4096] __attribute__((aligned(64)));
  for (int32_t c = 0; c < 16; ++c) {
    for (int32_t y = 0; y < 16; ++y) {
      #pragma omp simd
      for (int32_t x_1 = 0; x_1 < 16; ++x_1) {
        conv2d_nchw_pad_data[(((c * 256) + (y * 16)) + x_1)] = (((((y > 0) && (y < 15)) && (x_1 > 0)) && (x_1 < 15)) ? x_data[((((c * 196) + (y * 14)) + x_1) - 15)] : 0.0f);
      }
    }
  }
  #pragma omp parallel for schedule(static)
  for (int32_t n_o_fused = 0; n_o_fused < 16; ++n_o_fused) {
    conv2d_par(n_o_fused, conv2d_nchw_data, conv2d_nchw_pad_data, w_data);
  }
  return 0;
}

static int32_t conv2d_par(int32_t n_o_fused, float* restrict conv2d_nchw_data, float* restrict conv2d_nchw_pad_data, float* restrict w_data) {
  for (int32_t y_1 = 0; y_1 < 14; ++y_1) {
    for (int32_t x_outer_init = 0; x_outer_init < 2; ++x_outer_init) {
      #pragma omp simd
      for (int32_t x_inner_init = 0; x_inner_init < 8; ++x_inner_init) {
        if ((((x_outer_init * 8) + x_inner_init) < 14)) {
          conv2d_nchw_data[((((n_o_fused * 196) + (y_1 * 14)) + (x_outer_init * 8)) + x_inner_init)] = 0.0f;
        }
      }
    }
    for (int32_t rc = 0; rc < 16; ++rc) {
      for (int32_t ry = 0; ry < 3; ++ry) {
        for (int32_t rx = 0; rx < 3; ++rx) {
          for (int32_t x_outer = 0; x_outer < 2; ++x_outer) {
            #pragma omp simd
            for (int32_t x_inner = 0; x_inner < 8; ++x_inner) {
              if ((((x_outer * 8) + x_inner) < 14)) {
                conv2d_nchw_data[((((n_o_fused * 196) + (y_1 * 14)) + (x_outer * 8)) + x_inner)] = (conv2d_nchw_data[((((n_o_fused * 196) + (y_1 * 14)) + (x_outer * 8)) + x_inner)] + (conv2d_nchw_pad_data[((((((rc * 256) + (y_1 * 16)) + (ry * 16)) + (x_outer * 8)) + x_inner) + rx)] * w_data[((((n_o_fused * 144) + (rc * 9)) + (ry * 3)) + rx)]));
              }
            }
          }
        }
      }
    }
  }
  return 0;
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_conv2d(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)self;
  if (num_args != 3) {
    return kiln_fail("TypeError", "conv2d: expected 3 arguments (x, w, conv2d_nchw), got %d", (int)num_args);
  }
  DLTensor* x_tensor;
  if (kiln_arg_tensor(args, 0, "conv2d", "x", (DLDataType){2, 32, 1}, "float32", 4, 1, &x_tensor) != 0) return -1;
  DLTensor* w_tensor;
  if (kiln_arg_tensor(args, 1, "conv2d", "w", (DLDataType){2, 32, 1}, "float32", 4, 1, &w_tensor) != 0) return -1;
  DLTensor* conv2d_nchw_tensor;
  if (kiln_arg_tensor(args, 2, "conv2d", "conv2d_nchw", (DLDataType){2, 32, 1}, "float32", 4, 1, &conv2d_nchw_tensor) != 0) return -1;
  if (kiln_check_compact(x_tensor, "conv2d", "x") != 0) return -1;
  if (kiln_check_compact(w_tensor, "conv2d", "w") != 0) return -1;
  if (kiln_check_compact(conv2d_nchw_tensor, "conv2d", "conv2d_nchw") != 0) return -1;
  if (kiln_check_dim(kiln_dim(x_tensor, 0, 0), (int64_t)1, "conv2d", "x.shape[0]", "") != 0) return -1;
  if (kiln_check_dim(kiln_dim(x_tensor, 0, 1), (int64_t)16, "conv2d", "x.shape[1]", "") != 0) return -1;
  if (kiln_check_dim(kiln_dim(x_tensor, 0, 2), (int64_t)14, "conv2d", "x.shape[2]", "") != 0) return -1;
  if (kiln_check_dim(kiln_dim(x_tensor, 0, 3), (int64_t)14, "conv2d", "x.shape[3]", "") != 0) return -1;
  if (kiln_check_dim(kiln_dim(w_tensor, 0, 0), (int64_t)16, "conv2d", "w.shape[0]", "") != 0) return -1;
  if (kiln_check_dim(kiln_dim(w_tensor, 0, 1), (int64_t)16, "conv2d", "w.shape[1]", "") != 0) return -1;
  if (kiln_check_dim(kiln_dim(w_tensor, 0, 2), (int64_t)3, "conv2d", "w.shape[2]", "") != 0) return -1;
  if (kiln_check_dim(kiln_dim(w_tensor, 0, 3), (int64_t)3, "conv2d", "w.shape[3]", "") != 0) return -1;
  if (kiln_check_dim(kiln_dim(conv2d_nchw_tensor, 0, 0), (int64_t)1, "conv2d", "conv2d_nchw.shape[0]", "") != 0) return -1;
  if (kiln_check_dim(kiln_dim(conv2d_nchw_tensor, 0, 1), (int64_t)16, "conv2d", "conv2d_nchw.shape[1]", "") != 0) return -1;
  if (kiln_check_dim(kiln_dim(conv2d_nchw_tensor, 0, 2), (int64_t)14, "conv2d", "conv2d_nchw.shape[2]", "") != 0) return -1;
  if (kiln_check_dim(kiln_dim(conv2d_nchw_tensor, 0, 3), (int64_t)14, "conv2d", "conv2d_nchw.shape[3]", "") != 0) return -1;
  float* x_data = (float*)((char*)x_tensor->data + x_tensor->byte_offset);
  float* w_data = (float*)((char*)w_tensor->data + w_tensor->byte_offset);
  float* conv2d_nchw_data = (float*)((char*)conv2d_nchw_tensor->data + conv2d_nchw_tensor->byte_offset);
  return conv2d(x_data, w_data, conv2d_nchw_data);
}


/* kiln metadata: the exposed functions of this library (see kiln/runtime/module.py). */
#include <tvm/ffi/c_api.h>
#ifdef __cplusplus
extern "C"
#endif
TVM_FFI_DLL_EXPORT int __tvm_ffi___kiln_func_names(void* self, const TVMFFIAny* args,
                                                int32_t num_args, TVMFFIAny* result) {
  static const char names[] = "conv2d";
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
