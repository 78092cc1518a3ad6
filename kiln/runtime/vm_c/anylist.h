/* The kiln VM any-list contract: what compiled-mode C (`__vmtir__<name>` functions) includes.
 *
 * Read kiln/runtime/vm_anylist.py for the contract in prose. In short: a VM function in compiled
 * mode is `__vmtir__<name>(ctx_ptr, r, c, f)`; `r` (registers), `c` (constants) and `f`
 * (functions) are `TVMFFIAny` arrays ("any-lists"), `ctx_ptr` is the VM context, whose first
 * member is `KilnVMContextHeader`. Everything here is `static inline`, so generated libraries
 * need libtvm_ffi only, never the kiln VM runtime library.
 *
 * The kiln VM runtime (kiln/runtime/vm_c/)) is compiled after this header in one file.
 */
#ifndef KILN_VM_ANYLIST_H_
#define KILN_VM_ANYLIST_H_

#include <stdint.h>
#include <string.h>
#include <tvm/ffi/c_api.h>

/* Bumped whenever KilnVMContextHeader or the helpers below change meaning. */
#define KILN_VM_ABI_VERSION 2
#define KILN_VM_CTX_MAGIC 0x314d564bu /* "KVM1" little-endian */

/* The first member of every VM context that `ctx_ptr` points to. */
typedef struct KilnVMContextHeader {
  uint32_t magic;       /* KILN_VM_CTX_MAGIC */
  uint32_t abi_version; /* KILN_VM_ABI_VERSION */
  int32_t profiling;    /* nonzero: time every call and report it through `record` */
  int32_t reserved;
  int64_t (*now_ns)(void); /* the runtime's clock, so generated code needs no clock of its own */
  void (*record)(void* ctx, const char* callee, const TVMFFIAny* args, int64_t ns);
  /* The runtime's builtins as C entries, in the order of BUILTINS in
   * kiln/runtime/vm_builtins.py (the generated code calls them by that index). */
  const TVMFFISafeCallType* builtins;
  int64_t num_builtins;
} KilnVMContextHeader;

/* anylist_getitem(list, i): the i-th item, as a borrowed TVMFFIAny (an argument view). */
#define KILN_ANYLIST_GET(list, i) (((TVMFFIAny*)(list))[(i)])

static inline void kiln_vm_any_release(TVMFFIAny* a) {
  if (a->type_index >= kTVMFFIStaticObjectBegin && a->v_obj != NULL) {
    TVMFFIObjectDecRef(a->v_obj);
  }
  a->type_index = kTVMFFINone;
  a->zero_padding = 0;
  a->v_int64 = 0;
}

/* anylist_resetitem(list, i): drop the item (list[i] = None). */
static inline void kiln_vm_anylist_resetitem(void* list, int32_t index) {
  kiln_vm_any_release(&KILN_ANYLIST_GET(list, index));
}

/* Look up a global tvm-ffi function once and keep it in *cache (one static per call site). */
static inline int kiln_vm_lookup_global(void* volatile* cache, const char* name, void** out) {
  void* f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (f == NULL) {
    TVMFFIByteArray bytes;
    TVMFFIObjectHandle h = NULL;
    void* expected = NULL;
    bytes.data = name;
    bytes.size = strlen(name);
    if (TVMFFIFunctionGetGlobal(&bytes, &h) != 0) return -1;
    if (h == NULL) {
      const char* parts[3] = {"no global tvm-ffi function ", name, " is registered"};
      TVMFFIErrorSetRaisedFromCStrParts("RuntimeError", parts, 3);
      return -1;
    }
    if (__atomic_compare_exchange_n(cache, &expected, h, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      f = h;
    } else {
      TVMFFIObjectDecRef(h);
      f = expected;
    }
  }
  *out = f;
  return 0;
}

/* Call `fn(self, args, n, &ret)`, timing it when the context profiles; then move the result
 * into list[index] (the old item is released after the call, so an argument may alias it), or
 * drop it when list is NULL or index < 0. Returns 0, or -1 with the callee's error raised. */
static inline int kiln_vm_call_safe(void* ctx, TVMFFISafeCallType fn, void* self,
                                    const char* name, TVMFFIAny* args, int32_t n, void* list,
                                    int32_t index) {
  KilnVMContextHeader* hdr = (KilnVMContextHeader*)ctx;
  TVMFFIAny ret;
  int rc;
  ret.type_index = kTVMFFINone;
  ret.zero_padding = 0;
  ret.v_int64 = 0;
  if (hdr != NULL && hdr->profiling) {
    int64_t t0 = hdr->now_ns();
    rc = fn(self, args, n, &ret);
    hdr->record(ctx, name, args, hdr->now_ns() - t0);
  } else {
    rc = fn(self, args, n, &ret);
  }
  if (rc != 0) return rc;
  if (list == NULL || index < 0) {
    kiln_vm_any_release(&ret);
  } else {
    TVMFFIAny old = KILN_ANYLIST_GET(list, index);
    KILN_ANYLIST_GET(list, index) = ret;
    kiln_vm_any_release(&old);
  }
  return 0;
}

/* anylist_setitem_call_packed(list, index, "name", args...): list[index] = name(args...), the
 * global function looked up once through *cache. index < 0 (with list NULL): call_packed whose
 * result is dropped. */
static inline int kiln_vm_call_packed(void* ctx, void* volatile* cache, const char* name,
                                      TVMFFIAny* args, int32_t n, void* list, int32_t index) {
  void* f;
  TVMFFIFunctionCell* cell;
  if (kiln_vm_lookup_global(cache, name, &f) != 0) return -1;
  cell = (TVMFFIFunctionCell*)((char*)f + sizeof(TVMFFIObject));
  return kiln_vm_call_safe(ctx, cell->safe_call, f, name, args, n, list, index);
}

/* anylist_setitem_call_packed(list, index, "vm.builtin.x", args...) for the builtin at `builtin`
 * in the runtime's table: a direct C call through the context (no look-up, no function object).
 * Without a context that has the table (a NULL ctx), the global function is looked up by name
 * through *cache as `kiln_vm_call_packed` does. */
static inline int kiln_vm_call_builtin(void* ctx, void* volatile* cache, int32_t builtin,
                                       const char* name, TVMFFIAny* args, int32_t n, void* list,
                                       int32_t index) {
  KilnVMContextHeader* hdr = (KilnVMContextHeader*)ctx;
  if (hdr == NULL || builtin >= hdr->num_builtins) {
    return kiln_vm_call_packed(ctx, cache, name, args, n, list, index);
  }
  return kiln_vm_call_safe(ctx, hdr->builtins[builtin], NULL, name, args, n, list, index);
}

/* anylist_setitem_call_packed(list, index, "vm.builtin.copy", item): list[index] = item (an
 * owned copy), inline. Returns 0, or -1 with an error raised (a view that cannot be owned). */
static inline int kiln_vm_anylist_copy(void* list, int32_t index, const TVMFFIAny* item) {
  TVMFFIAny v = *item, old;
  int32_t t = item->type_index;
  if (t >= kTVMFFIStaticObjectBegin) {
    if (v.v_obj != NULL) TVMFFIObjectIncRef(v.v_obj);
  } else if (t == kTVMFFIRawStr || t == kTVMFFIDLTensorPtr || t == kTVMFFIByteArrayPtr ||
             t == kTVMFFIObjectRValueRef) {
    v.type_index = kTVMFFINone;
    v.zero_padding = 0;
    v.v_int64 = 0;
    if (TVMFFIAnyViewToOwnedAny(item, &v) != 0) return -1;
  }
  old = KILN_ANYLIST_GET(list, index);
  KILN_ANYLIST_GET(list, index) = v;
  kiln_vm_any_release(&old);
  return 0;
}

/* Guards of compiled-mode checks whose arguments are known when the code is generated: 1 when
 * the check passes, 0 when the builtin must run (it then raises its own error, or passes). */

static inline const DLTensor* kiln_vm_as_tensor(const TVMFFIAny* x) {
  if (x->type_index == kTVMFFITensor) {
    return (const DLTensor*)((const char*)x->v_obj + sizeof(TVMFFIObject));
  }
  return x->type_index == kTVMFFIDLTensorPtr ? (const DLTensor*)x->v_ptr : NULL;
}

/* Slot `slot` of the shape heap in item `x` (the int64 CPU tensor vm.builtin.alloc_shape_heap
 * made): a dim read where a kernel is called directly with it. */
static inline int64_t kiln_vm_heap_load(const TVMFFIAny* x, int64_t slot) {
  const DLTensor* t = kiln_vm_as_tensor(x);
  return ((const int64_t*)((const char*)t->data + t->byte_offset))[slot];
}

/* vm.builtin.check_tensor_info(x, ndim, dtype, err_ctx) would pass. */
static inline int kiln_vm_tensor_ok(const TVMFFIAny* x, int64_t ndim, const TVMFFIAny* dtype) {
  const DLTensor* t = kiln_vm_as_tensor(x);
  DLDataType w;
  if (t == NULL || (ndim >= 0 && t->ndim != ndim)) return 0;
  if (dtype->type_index == kTVMFFINone) return 1;
  if (dtype->type_index != kTVMFFIDataType) return 0;
  w = dtype->v_dtype;
  if (w.code == kDLOpaqueHandle && w.bits == 0) return 1;
  return w.code == t->dtype.code && w.bits == t->dtype.bits && w.lanes == t->dtype.lanes;
}

/* vm.builtin.match_shape(x, None, ndim, spec..., err_ctx) would pass, where spec holds (code,
 * value) per dim and every code is 0 (no-op) or 1 (equal to value); other codes return 0. */
static inline int kiln_vm_shape_ok(const TVMFFIAny* x, int64_t ndim, const int64_t* spec) {
  const DLTensor* t = kiln_vm_as_tensor(x);
  const int64_t* dims;
  int64_t have;
  if (t != NULL) {
    dims = t->shape;
    have = t->ndim;
  } else if (x->type_index == kTVMFFIShape) {
    const TVMFFIShapeCell* cell =
        (const TVMFFIShapeCell*)((const char*)x->v_obj + sizeof(TVMFFIObject));
    dims = cell->data;
    have = (int64_t)cell->size;
  } else {
    return 0;
  }
  if (have != ndim) return 0;
  for (int64_t i = 0; i < ndim; ++i) {
    if (spec[2 * i] == 1 ? dims[i] != spec[2 * i + 1] : spec[2 * i] != 0) return 0;
  }
  return 1;
}

/* anylist_setitem_call_cpacked(list, index, "symbol", args..., NULL): list[index] =
 * __tvm_ffi_<symbol>(NULL, args, n) of a function in the same library (no lookup). */
static inline int kiln_vm_call_cpacked(void* ctx, TVMFFISafeCallType fn, const char* name,
                                       TVMFFIAny* args, int32_t n, void* list, int32_t index) {
  return kiln_vm_call_safe(ctx, fn, NULL, name, args, n, list, index);
}

#endif /* KILN_VM_ANYLIST_H_ */
