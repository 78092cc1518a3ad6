"""C source of kiln's small CUDA memory library (built once by the C toolchain, then cached).

It exports tvm-ffi functions over the driver loader of `kiln.runtime.cuda_driver`:

- ``kiln_cuda_status()`` -> "" when a driver and a device are usable, else the reason;
- ``kiln_cuda_empty(device_id, code, bits, lanes, *shape)`` -> a new tvm-ffi Tensor in device
  memory (``cuMemAlloc``), freed (``cuMemFree``) when the last reference goes;
- ``kiln_cuda_copy(dst, src)``: a whole-tensor copy host->device, device->host or
  device->device between two compact tensors of the same byte size; the device's pending work is
  finished first, so a copy to the host sees every kernel launched before it;
- ``kiln_cuda_synchronize(device_id)``: wait for the device's work.

None of this is on the kernel launch path; it serves tests and users without PyTorch or CuPy.
"""

from __future__ import annotations

from kiln.runtime.cuda_driver import DRIVER_C
from kiln.runtime.metadata import metadata_c_source

_MEMORY_C = r"""
#define KILN_MAX_NDIM 16

typedef struct {
  DLManagedTensor managed;
  kiln_CUcontext ctx;
  int64_t shape[KILN_MAX_NDIM];
} kiln_cuda_tensor;

static int kiln_fail_msg(const char* kind, const char* msg) {
  TVMFFIErrorSetRaisedFromCStr(kind, msg);
  return -1;
}

static void kiln_cuda_tensor_free(DLManagedTensor* self) {
  kiln_cuda_tensor* t = (kiln_cuda_tensor*)self;
  kiln_CUcontext popped = NULL;
  if (t->managed.dl_tensor.data != NULL && kiln_cu.CtxPushCurrent(t->ctx) == 0) {
    kiln_cu.MemFree((kiln_CUdeviceptr)(uintptr_t)t->managed.dl_tensor.data);
    kiln_cu.CtxPopCurrent(&popped);
  }
  free(t);
}

static DLTensor* kiln_tensor_arg(const TVMFFIAny* a) {
  if (a->type_index == kTVMFFITensor) return (DLTensor*)((char*)a->v_obj + sizeof(TVMFFIObject));
  if (a->type_index == kTVMFFIDLTensorPtr) return (DLTensor*)a->v_ptr;
  return NULL;
}

static int64_t kiln_nbytes(const DLTensor* t) {
  int64_t n = ((int64_t)t->dtype.bits * t->dtype.lanes + 7) / 8;
  for (int d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_kiln_cuda_status(void* self, const TVMFFIAny* args,
                                                  int32_t num_args, TVMFFIAny* result) {
  TVMFFIByteArray bytes;
  (void)self;
  (void)args;
  (void)num_args;
  if (kiln_cuda_init() != 0) {
    TVMFFIObjectHandle err = NULL;
    TVMFFIErrorMoveFromRaised(&err);
    if (err != NULL) TVMFFIObjectDecRef(err);
    bytes.data = kiln_cuda_why;
  } else {
    bytes.data = "";
  }
  bytes.size = strlen(bytes.data);
  return TVMFFIStringFromByteArray(&bytes, result);
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_kiln_cuda_empty(void* self, const TVMFFIAny* args,
                                                 int32_t num_args, TVMFFIAny* result) {
  (void)self;
  if (num_args < 4 || num_args - 4 > KILN_MAX_NDIM) {
    return kiln_fail_msg("TypeError", "kiln_cuda_empty(device_id, code, bits, lanes, *shape)");
  }
  int dev = (int)args[0].v_int64;
  kiln_CUcontext ctx = kiln_cuda_context(dev);
  if (ctx == NULL) return -1;
  kiln_cuda_tensor* t = (kiln_cuda_tensor*)calloc(1, sizeof(kiln_cuda_tensor));
  if (t == NULL) return kiln_fail_msg("MemoryError", "kiln: out of host memory");
  DLTensor* dl = &t->managed.dl_tensor;
  t->ctx = ctx;
  dl->device.device_type = kDLCUDA;
  dl->device.device_id = dev;
  dl->dtype.code = (uint8_t)args[1].v_int64;
  dl->dtype.bits = (uint8_t)args[2].v_int64;
  dl->dtype.lanes = (uint16_t)args[3].v_int64;
  dl->ndim = num_args - 4;
  dl->shape = t->shape;
  for (int d = 0; d < dl->ndim; ++d) t->shape[d] = args[4 + d].v_int64;
  t->managed.deleter = kiln_cuda_tensor_free;
  int64_t nbytes = kiln_nbytes(dl);
  kiln_CUdeviceptr p = 0;
  kiln_CUcontext popped = NULL;
  kiln_CUresult r = kiln_cu.CtxPushCurrent(ctx);
  if (r == 0) {
    if (nbytes > 0) r = kiln_cu.MemAlloc(&p, (size_t)nbytes);
    kiln_cu.CtxPopCurrent(&popped);
  }
  if (r != 0) {
    free(t);
    return kiln_cuda_error(r, "allocating device memory", "");
  }
  dl->data = (void*)(uintptr_t)p;
  TVMFFIObjectHandle out = NULL;
  if (TVMFFITensorFromDLPack(&t->managed, 0, 0, &out) != 0) {
    kiln_cuda_tensor_free(&t->managed);
    return -1;
  }
  result->type_index = kTVMFFITensor;
  result->zero_padding = 0;
  result->v_obj = (TVMFFIObject*)out;
  return 0;
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_kiln_cuda_copy(void* self, const TVMFFIAny* args,
                                                int32_t num_args, TVMFFIAny* result) {
  (void)self;
  (void)result;
  DLTensor* dst = num_args == 2 ? kiln_tensor_arg(&args[0]) : NULL;
  DLTensor* src = num_args == 2 ? kiln_tensor_arg(&args[1]) : NULL;
  if (dst == NULL || src == NULL) return kiln_fail_msg("TypeError", "kiln_cuda_copy(dst, src)");
  int64_t n = kiln_nbytes(src);
  if (kiln_nbytes(dst) != n) return kiln_fail_msg("ValueError", "kiln_cuda_copy: sizes differ");
  int d_gpu = dst->device.device_type == kDLCUDA, s_gpu = src->device.device_type == kDLCUDA;
  kiln_CUcontext ctx = kiln_cuda_context(d_gpu ? dst->device.device_id : src->device.device_id);
  if (ctx == NULL) return -1;
  char* dp = (char*)dst->data + dst->byte_offset;
  char* sp = (char*)src->data + src->byte_offset;
  kiln_CUcontext popped = NULL;
  kiln_CUresult r = kiln_cu.CtxPushCurrent(ctx);
  if (r != 0) return kiln_cuda_error(r, "cuCtxPushCurrent", "");
  r = kiln_cu.CtxSynchronize();
  if (r == 0 && n > 0) {
    if (d_gpu && s_gpu) {
      r = kiln_cu.MemcpyDtoD((kiln_CUdeviceptr)(uintptr_t)dp, (kiln_CUdeviceptr)(uintptr_t)sp, n);
    } else if (d_gpu) {
      r = kiln_cu.MemcpyHtoD((kiln_CUdeviceptr)(uintptr_t)dp, sp, (size_t)n);
    } else if (s_gpu) {
      r = kiln_cu.MemcpyDtoH(dp, (kiln_CUdeviceptr)(uintptr_t)sp, (size_t)n);
    } else {
      memcpy(dp, sp, (size_t)n);
    }
  }
  kiln_cu.CtxPopCurrent(&popped);
  return r == 0 ? 0 : kiln_cuda_error(r, "copying memory (an earlier kernel may have failed)", "");
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_kiln_cuda_synchronize(void* self, const TVMFFIAny* args,
                                                       int32_t num_args, TVMFFIAny* result) {
  (void)self;
  (void)result;
  kiln_CUcontext ctx = kiln_cuda_context(num_args > 0 ? (int)args[0].v_int64 : 0);
  kiln_CUcontext popped = NULL;
  if (ctx == NULL) return -1;
  kiln_CUresult r = kiln_cu.CtxPushCurrent(ctx);
  if (r == 0) {
    r = kiln_cu.CtxSynchronize();
    kiln_cu.CtxPopCurrent(&popped);
  }
  return r == 0 ? 0 : kiln_cuda_error(r, "synchronizing the device", "");
}
"""

_INCLUDES = """\
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tvm/ffi/c_api.h>
"""

MEMORY_FUNCTIONS = (
    "kiln_cuda_status",
    "kiln_cuda_empty",
    "kiln_cuda_copy",
    "kiln_cuda_synchronize",
)


def memory_library_source() -> str:
    """The C source of the CUDA memory library (see module docstring)."""
    return _INCLUDES + DRIVER_C + _MEMORY_C + metadata_c_source(MEMORY_FUNCTIONS)
