/* kiln VM runtime, part 3 of 5: input checks and symbolic shapes (`vm.builtin.check_*`,
 * `match_shape`, `make_shape`, `match_prim_value`, `make_prim_value`).
 *
 * `err_ctx` is a string naming what is checked, e.g. "main: argument x"; messages append to it:
 * "main: argument x.shape[1] expected 16, got 15". Symbolic dims live in a shape heap, an int64
 * tensor from `vm.builtin.alloc_shape_heap`, addressed by slot.
 */

/* Match codes (kiln/runtime/vm_builtins.py MatchCode / MakeCode). */
enum { KVM_MATCH_NOOP = 0, KVM_MATCH_EQ_IMM = 1, KVM_MATCH_STORE = 2, KVM_MATCH_EQ_HEAP = 3 };
enum { KVM_MAKE_IMM = 0, KVM_MAKE_LOAD = 1 };

/* The error context argument `i` as "%.*s" parts (a placeholder when it is not a string). */
static void kvm_err_ctx(const TVMFFIAny* args, int i, const char** s, int* len) {
  if (!kvm_str(&args[i], s, len)) {
    *s = "value";
    *len = 5;
  }
}

/* The heap argument: an int64 CPU tensor, or None when the caller needs no heap. */
static int kvm_heap_arg(const TVMFFIAny* args, int i, const char* fn, int64_t** data,
                        int64_t* size) {
  DLTensor* t;
  *data = NULL;
  *size = 0;
  if (args[i].type_index == kTVMFFINone) return 0;
  t = kvm_dltensor(&args[i]);
  if (t == NULL || t->ndim != 1 || t->dtype.code != kDLInt || t->dtype.bits != 64 ||
      t->device.device_type != kDLCPU) {
    return kvm_fail("TypeError", "%s: argument %d (heap) expected a 1-D int64 CPU tensor, got %s",
                    fn, i, kvm_kind_name(args[i].type_index));
  }
  *data = (int64_t*)((char*)t->data + t->byte_offset);
  *size = t->shape[0];
  return 0;
}

static int kvm_heap_slot(const char* fn, int64_t slot, int64_t size) {
  if (slot < 0 || slot >= size) {
    return kvm_fail("IndexError", "%s: shape heap slot %lld out of range (the heap has %lld)", fn,
                    (long long)slot, (long long)size);
  }
  return 0;
}

/* Apply one match code to `actual`; errors name it as `what` formatted with `dim`, e.g.
 * ".shape[%lld]" -> ".shape[1]" (NULL: "", a prim value). NOTE: formatted only on a mismatch:
 * an snprintf per dim was a fifth of a small VM call. */
static int kvm_match_one(const char* fn, int64_t code, int64_t v, int64_t actual, int64_t* heap,
                         int64_t heap_size, const char* ctx, int ctx_len, const char* what,
                         int64_t dim) {
  int64_t expect;
  char name[48];
  switch (code) {
    case KVM_MATCH_NOOP: return 0;
    case KVM_MATCH_EQ_IMM: expect = v; break;
    case KVM_MATCH_STORE:
      if (kvm_heap_slot(fn, v, heap_size) != 0) return -1;
      heap[v] = actual;
      return 0;
    case KVM_MATCH_EQ_HEAP:
      if (kvm_heap_slot(fn, v, heap_size) != 0) return -1;
      expect = heap[v];
      break;
    default: return kvm_fail("ValueError", "%s: unknown match code %lld", fn, (long long)code);
  }
  if (actual == expect) return 0;
  name[0] = '\0';
  if (what != NULL) snprintf(name, sizeof(name), what, (long long)dim);
  return kvm_fail("ValueError", "%.*s%s expected %lld, got %lld", ctx_len, ctx, name,
                  (long long)expect, (long long)actual);
}

/* match_shape(value, heap, ndim, code0, v0, ..., err_ctx): check or record the dims of a tensor
 * (value.shape) or of a shape value. */
KVM_BUILTIN(kvm_b_match_shape) {
  static const char* fn = "vm.builtin.match_shape";
  const char* ctx;
  int ctx_len;
  int64_t *heap = NULL, heap_size = 0, ndim = 0, code = 0, v = 0;
  const int64_t* dims = NULL;
  int64_t have;
  DLTensor* t;
  TVMFFIShapeCell* cell;
  (void)self;
  if (kvm_nargs(fn, n, 4, -1) != 0 || kvm_int_arg(args, 2, fn, "ndim", &ndim) != 0) return -1;
  if (ndim < 0 || n != 4 + 2 * ndim) {
    return kvm_fail("TypeError", "%s: %lld dims need %lld arguments, got %d", fn,
                    (long long)ndim, (long long)(4 + 2 * ndim), n);
  }
  if (kvm_heap_arg(args, 1, fn, &heap, &heap_size) != 0) return -1;
  kvm_err_ctx(args, n - 1, &ctx, &ctx_len);
  if ((t = kvm_dltensor(&args[0])) != NULL) {
    dims = t->shape;
    have = t->ndim;
  } else if ((cell = kvm_shape_cell(&args[0])) != NULL) {
    dims = cell->data;
    have = (int64_t)cell->size;
  } else {
    return kvm_fail("TypeError", "%.*s expected a tensor or a shape, got %s", ctx_len, ctx,
                    kvm_kind_name(args[0].type_index));
  }
  if (have != ndim) {
    return kvm_fail("ValueError", "%.*s expected %lld dimensions, got %lld", ctx_len, ctx,
                    (long long)ndim, (long long)have);
  }
  for (int64_t i = 0; i < ndim; ++i) {
    const char* what = t != NULL ? ".shape[%lld]" : "[%lld]";
    if (kvm_int_arg(args, (int)(3 + 2 * i), fn, "code", &code) != 0 ||
        kvm_int_arg(args, (int)(4 + 2 * i), fn, "value", &v) != 0 ||
        kvm_match_one(fn, code, v, dims[i], heap, heap_size, ctx, ctx_len, what, i) != 0) {
      return -1;
    }
  }
  kvm_set_none(ret);
  return 0;
}

/* make_shape(heap, ndim, code0, v0, ...) -> shape: each dim an immediate or a heap slot. */
KVM_BUILTIN(kvm_b_make_shape) {
  static const char* fn = "vm.builtin.make_shape";
  int64_t *heap = NULL, heap_size = 0, ndim = 0, code = 0, v = 0;
  int64_t dims[KVM_MAX_DIMS];
  (void)self;
  if (kvm_nargs(fn, n, 2, -1) != 0 || kvm_int_arg(args, 1, fn, "ndim", &ndim) != 0) return -1;
  if (ndim < 0 || ndim > KVM_MAX_DIMS || n != 2 + 2 * ndim) {
    return kvm_fail("TypeError", "%s: %lld dims need %lld arguments, got %d", fn,
                    (long long)ndim, (long long)(2 + 2 * ndim), n);
  }
  if (kvm_heap_arg(args, 0, fn, &heap, &heap_size) != 0) return -1;
  for (int64_t i = 0; i < ndim; ++i) {
    if (kvm_int_arg(args, (int)(2 + 2 * i), fn, "code", &code) != 0 ||
        kvm_int_arg(args, (int)(3 + 2 * i), fn, "value", &v) != 0) {
      return -1;
    }
    if (code == KVM_MAKE_IMM) {
      dims[i] = v;
    } else if (code == KVM_MAKE_LOAD) {
      if (kvm_heap_slot(fn, v, heap_size) != 0) return -1;
      dims[i] = heap[v];
    } else {
      return kvm_fail("ValueError", "%s: unknown make code %lld", fn, (long long)code);
    }
  }
  return kvm_make_shape(dims, ndim, ret);
}

/* match_prim_value(value, heap, code, v, err_ctx): match_shape for one int. */
KVM_BUILTIN(kvm_b_match_prim_value) {
  static const char* fn = "vm.builtin.match_prim_value";
  const char* ctx;
  int ctx_len;
  int64_t *heap = NULL, heap_size = 0, code = 0, v = 0;
  (void)self;
  if (kvm_nargs(fn, n, 5, 5) != 0 || kvm_heap_arg(args, 1, fn, &heap, &heap_size) != 0 ||
      kvm_int_arg(args, 2, fn, "code", &code) != 0 ||
      kvm_int_arg(args, 3, fn, "value", &v) != 0) {
    return -1;
  }
  kvm_err_ctx(args, 4, &ctx, &ctx_len);
  if (args[0].type_index != kTVMFFIInt && args[0].type_index != kTVMFFIBool) {
    return kvm_fail("TypeError", "%.*s expected an int, got %s", ctx_len, ctx,
                    kvm_kind_name(args[0].type_index));
  }
  if (kvm_match_one(fn, code, v, args[0].v_int64, heap, heap_size, ctx, ctx_len, NULL, 0) != 0) {
    return -1;
  }
  kvm_set_none(ret);
  return 0;
}

/* make_prim_value(heap, code, v) -> int. */
KVM_BUILTIN(kvm_b_make_prim_value) {
  static const char* fn = "vm.builtin.make_prim_value";
  int64_t *heap = NULL, heap_size = 0, code = 0, v = 0;
  (void)self;
  if (kvm_nargs(fn, n, 3, 3) != 0 || kvm_heap_arg(args, 0, fn, &heap, &heap_size) != 0 ||
      kvm_int_arg(args, 1, fn, "code", &code) != 0 ||
      kvm_int_arg(args, 2, fn, "value", &v) != 0) {
    return -1;
  }
  if (code == KVM_MAKE_LOAD) {
    if (kvm_heap_slot(fn, v, heap_size) != 0) return -1;
    v = heap[v];
  } else if (code != KVM_MAKE_IMM) {
    return kvm_fail("ValueError", "%s: unknown make code %lld", fn, (long long)code);
  }
  kvm_set_int(ret, v);
  return 0;
}

/* check_tensor_info(x, ndim (-1: any), dtype (None: any), err_ctx). */
KVM_BUILTIN(kvm_b_check_tensor_info) {
  static const char* fn = "vm.builtin.check_tensor_info";
  const char* ctx;
  int ctx_len;
  int64_t ndim = 0;
  DLTensor* t;
  (void)self;
  if (kvm_nargs(fn, n, 4, 4) != 0 || kvm_int_arg(args, 1, fn, "ndim", &ndim) != 0) return -1;
  kvm_err_ctx(args, 3, &ctx, &ctx_len);
  if ((t = kvm_dltensor(&args[0])) == NULL) {
    return kvm_fail("TypeError", "%.*s expected a tensor, got %s", ctx_len, ctx,
                    kvm_kind_name(args[0].type_index));
  }
  if (ndim >= 0 && t->ndim != ndim) {
    return kvm_fail("ValueError", "%.*s expected a tensor of rank %lld, got rank %d", ctx_len,
                    ctx, (long long)ndim, t->ndim);
  }
  if (args[2].type_index == kTVMFFIDataType) {
    DLDataType want = args[2].v_dtype;
    int is_void = want.code == kDLOpaqueHandle && want.bits == 0;
    if (!is_void && (want.code != t->dtype.code || want.bits != t->dtype.bits ||
                     want.lanes != t->dtype.lanes)) {
      char w[64], g[64];
      kvm_dtype_str(want, w, sizeof(w));
      kvm_dtype_str(t->dtype, g, sizeof(g));
      return kvm_fail("TypeError", "%.*s expected dtype %s, got %s", ctx_len, ctx, w, g);
    }
  } else if (args[2].type_index != kTVMFFINone) {
    return kvm_fail("TypeError", "%s: argument 2 (dtype) expected a dtype or None, got %s", fn,
                    kvm_kind_name(args[2].type_index));
  }
  kvm_set_none(ret);
  return 0;
}

/* check_shape_info(x, ndim (-1: any), err_ctx). */
KVM_BUILTIN(kvm_b_check_shape_info) {
  static const char* fn = "vm.builtin.check_shape_info";
  const char* ctx;
  int ctx_len;
  int64_t ndim = 0;
  TVMFFIShapeCell* cell;
  (void)self;
  if (kvm_nargs(fn, n, 3, 3) != 0 || kvm_int_arg(args, 1, fn, "ndim", &ndim) != 0) return -1;
  kvm_err_ctx(args, 2, &ctx, &ctx_len);
  if ((cell = kvm_shape_cell(&args[0])) == NULL) {
    return kvm_fail("TypeError", "%.*s expected a shape, got %s", ctx_len, ctx,
                    kvm_kind_name(args[0].type_index));
  }
  if (ndim >= 0 && (int64_t)cell->size != ndim) {
    return kvm_fail("ValueError", "%.*s expected a shape of %lld dims, got %lld", ctx_len, ctx,
                    (long long)ndim, (long long)cell->size);
  }
  kvm_set_none(ret);
  return 0;
}

/* check_tuple_info(x, size (-1: any), err_ctx). */
KVM_BUILTIN(kvm_b_check_tuple_info) {
  static const char* fn = "vm.builtin.check_tuple_info";
  const char* ctx;
  int ctx_len;
  int64_t size = 0;
  TVMFFISeqCell* cell;
  (void)self;
  if (kvm_nargs(fn, n, 3, 3) != 0 || kvm_int_arg(args, 1, fn, "size", &size) != 0) return -1;
  kvm_err_ctx(args, 2, &ctx, &ctx_len);
  if ((cell = kvm_seq_cell(&args[0])) == NULL) {
    return kvm_fail("TypeError", "%.*s expected a tuple, got %s", ctx_len, ctx,
                    kvm_kind_name(args[0].type_index));
  }
  if (size >= 0 && cell->size != size) {
    return kvm_fail("ValueError", "%.*s expected a tuple of %lld items, got %lld", ctx_len, ctx,
                    (long long)size, (long long)cell->size);
  }
  kvm_set_none(ret);
  return 0;
}

/* check_func_info(x, err_ctx). */
KVM_BUILTIN(kvm_b_check_func_info) {
  static const char* fn = "vm.builtin.check_func_info";
  const char* ctx;
  int ctx_len;
  (void)self;
  if (kvm_nargs(fn, n, 2, 2) != 0) return -1;
  kvm_err_ctx(args, 1, &ctx, &ctx_len);
  if (args[0].type_index != kTVMFFIFunction) {
    return kvm_fail("TypeError", "%.*s expected a function, got %s", ctx_len, ctx,
                    kvm_kind_name(args[0].type_index));
  }
  kvm_set_none(ret);
  return 0;
}

typedef struct {
  const char* name;
  TVMFFISafeCallType fn;
} KvmBuiltin;

/* Every builtin, by its global name, in the order of BUILTINS in kiln/runtime/vm_builtins.py
 * (the init function returns the names so that the Python side checks the order: compiled-mode
 * code calls a builtin by its index in this table, through `KilnVMContextHeader.builtins`). */
static const KvmBuiltin kvm_builtins[] = {
    {"vm.builtin.alloc_storage", kvm_b_alloc_storage},
    {"vm.builtin.alloc_tensor", kvm_b_alloc_tensor},
    {"vm.builtin.empty", kvm_b_empty},
    {"vm.builtin.alloc_shape_heap", kvm_b_alloc_shape_heap},
    {"vm.builtin.make_tuple", kvm_b_make_tuple},
    {"vm.builtin.tuple_getitem", kvm_b_tuple_getitem},
    {"vm.builtin.make_closure", kvm_b_make_closure},
    {"vm.builtin.invoke_closure", kvm_b_invoke_closure},
    {"vm.builtin.call_tir_dyn", kvm_b_call_tir_dyn},
    {"vm.builtin.read_if_cond", kvm_b_read_if_cond},
    {"vm.builtin.copy", kvm_b_copy},
    {"vm.builtin.null_value", kvm_b_null_value},
    {"vm.builtin.shape_of", kvm_b_shape_of},
    {"vm.builtin.tensor_to_shape", kvm_b_tensor_to_shape},
    {"vm.builtin.reshape", kvm_b_reshape},
    {"vm.builtin.match_shape", kvm_b_match_shape},
    {"vm.builtin.make_shape", kvm_b_make_shape},
    {"vm.builtin.match_prim_value", kvm_b_match_prim_value},
    {"vm.builtin.make_prim_value", kvm_b_make_prim_value},
    {"vm.builtin.check_tensor_info", kvm_b_check_tensor_info},
    {"vm.builtin.check_shape_info", kvm_b_check_shape_info},
    {"vm.builtin.check_tuple_info", kvm_b_check_tuple_info},
    {"vm.builtin.check_func_info", kvm_b_check_func_info},
    {"vm.builtin.call_memoized", kvm_b_call_memoized},
    {"vm.builtin.random_seed", kvm_b_random_seed},
};

#define KVM_NUM_BUILTINS ((int64_t)(sizeof(kvm_builtins) / sizeof(kvm_builtins[0])))

/* The C entries of `kvm_builtins`, in order: what every VM context's header points to. */
static TVMFFISafeCallType kvm_builtin_fns[sizeof(kvm_builtins) / sizeof(kvm_builtins[0])];
