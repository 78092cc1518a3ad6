"""The C that the oneDNN (``dnnl``) codegen emits: shared helpers and one function per plan.

Every file-scope name is ``static`` and starts with ``kiln_dnnl_``; the helpers sit behind an
``#ifndef`` guard, so several functions' sources can share one translation unit (see
`kiln.relax.backend.codegen`). The exported entry ``__tvm_ffi_<symbol>`` checks its arguments
(float32 CPU tensors of the planned shapes, compact), creates the oneDNN primitive on its first
call (memory formats left to oneDNN, with reorders from and to the caller's plain layouts) and
runs it: reorder in, execute, reorder out. NOTE: the first-call initialization is not guarded
against two threads calling a function for the first time at once.
"""

from __future__ import annotations

HELPERS = r"""
#ifndef KILN_DNNL_HELPERS
#define KILN_DNNL_HELPERS
#include <stdio.h>
#include <string.h>
#include <tvm/ffi/c_api.h>
#include <dlpack/dlpack.h>
#include <oneapi/dnnl/dnnl.h>

static dnnl_engine_t kiln_dnnl_eng;
static dnnl_stream_t kiln_dnnl_strm;

static int kiln_dnnl_error(const char* kind, const char* fn, const char* what, long a, long b) {
  char msg[320];
  snprintf(msg, sizeof(msg), "%s: %s (%ld, %ld)", fn, what, a, b);
  TVMFFIErrorSetRaisedFromCStr(kind, msg);
  return -1;
}

#define KILN_DNNL_CHECK(fn, call)                                                        \
  do {                                                                                   \
    dnnl_status_t kiln_dnnl_s = (call);                                                  \
    if (kiln_dnnl_s != dnnl_success)                                                     \
      return kiln_dnnl_error("RuntimeError", fn, "oneDNN call failed: " #call " (status, 0)", \
                             (long)kiln_dnnl_s, 0);                                      \
  } while (0)

static int kiln_dnnl_setup(const char* fn) {
  if (kiln_dnnl_eng != NULL) return 0;
  KILN_DNNL_CHECK(fn, dnnl_engine_create(&kiln_dnnl_eng, dnnl_cpu, 0));
  KILN_DNNL_CHECK(fn, dnnl_stream_create(&kiln_dnnl_strm, kiln_dnnl_eng,
                                         dnnl_stream_default_flags));
  return 0;
}

/* args[i]: a compact float32 CPU tensor of shape `shape` (`ndim` dims); its data in *data. */
static int kiln_dnnl_arg(const TVMFFIAny* args, int i, const char* fn, int ndim,
                         const int64_t* shape, void** data) {
  DLTensor* t = NULL;
  int32_t kind = args[i].type_index;
  int64_t expect = 1;
  if (kind == kTVMFFITensor) t = (DLTensor*)((char*)args[i].v_obj + sizeof(TVMFFIObject));
  if (kind == kTVMFFIDLTensorPtr) t = (DLTensor*)args[i].v_ptr;
  if (t == NULL)
    return kiln_dnnl_error("TypeError", fn, "argument (index, kind) is not a tensor", i, kind);
  if (t->dtype.code != kDLFloat || t->dtype.bits != 32 || t->dtype.lanes != 1)
    return kiln_dnnl_error("TypeError", fn, "argument (index, dtype code) is not float32", i,
                           t->dtype.code);
  if (t->device.device_type != kDLCPU)
    return kiln_dnnl_error("ValueError", fn, "argument (index, device) is not on the CPU", i,
                           t->device.device_type);
  if (t->ndim != ndim)
    return kiln_dnnl_error("ValueError", fn, "argument (index, ndim) has the wrong rank", i,
                           t->ndim);
  for (int d = ndim - 1; d >= 0; --d) {
    if (t->shape[d] != shape[d])
      return kiln_dnnl_error("ValueError", fn, "argument (index, extent) has the wrong shape", i,
                             t->shape[d]);
    if (t->strides != NULL && shape[d] != 1 && t->strides[d] != expect)
      return kiln_dnnl_error("ValueError", fn, "argument (index, axis) is not compact", i, d);
    expect *= shape[d];
  }
  *data = (char*)t->data + t->byte_offset;
  return 0;
}

/* The caller's memory (`user`) and, when the primitive wants another format, its own copy
   (`inner`) with the reorder between them: user -> inner for inputs, back for outputs. */
typedef struct {
  dnnl_memory_t user, inner;
  dnnl_primitive_t reorder;
} kiln_dnnl_buf;

static int kiln_dnnl_buf_init(const char* fn, kiln_dnnl_buf* b, const_dnnl_memory_desc_t user,
                              const_dnnl_memory_desc_t want, int input) {
  dnnl_primitive_desc_t rpd;
  KILN_DNNL_CHECK(fn, dnnl_memory_create(&b->user, user, kiln_dnnl_eng, DNNL_MEMORY_NONE));
  b->inner = b->user;
  b->reorder = NULL;
  if (dnnl_memory_desc_equal(user, want)) return 0;
  KILN_DNNL_CHECK(fn, dnnl_memory_create(&b->inner, want, kiln_dnnl_eng, DNNL_MEMORY_ALLOCATE));
  if (input) {
    KILN_DNNL_CHECK(fn, dnnl_reorder_primitive_desc_create(&rpd, user, kiln_dnnl_eng, want,
                                                           kiln_dnnl_eng, NULL));
  } else {
    KILN_DNNL_CHECK(fn, dnnl_reorder_primitive_desc_create(&rpd, want, kiln_dnnl_eng, user,
                                                           kiln_dnnl_eng, NULL));
  }
  KILN_DNNL_CHECK(fn, dnnl_primitive_create(&b->reorder, rpd));
  dnnl_primitive_desc_destroy(rpd);
  return 0;
}

static int kiln_dnnl_reorder(const char* fn, kiln_dnnl_buf* b, int input) {
  dnnl_exec_arg_t a[2];
  if (b->reorder == NULL) return 0;
  a[0].arg = DNNL_ARG_FROM;
  a[0].memory = input ? b->user : b->inner;
  a[1].arg = DNNL_ARG_TO;
  a[1].memory = input ? b->inner : b->user;
  KILN_DNNL_CHECK(fn, dnnl_primitive_execute(b->reorder, kiln_dnnl_strm, 2, a));
  return 0;
}
#endif /* KILN_DNNL_HELPERS */
"""
