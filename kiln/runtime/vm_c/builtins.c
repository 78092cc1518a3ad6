/* kiln VM runtime, part 2 of 5: the builtins `vm.builtin.*`, one tvm-ffi safe call each.
 *
 * The table of names, arities and effects is kiln/runtime/vm_builtins.py; `kvm_builtins` at the
 * end of this file must list the same names (a test checks both directions). Every builtin
 * checks its argument count and kinds and raises a TypeError / ValueError naming itself.
 */

#define KVM_BUILTIN(fn) \
  static int fn(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret)

/* The VM context argument of builtins that take one (checked: a kiln VM of this ABI). */
static KilnVM* kvm_ctx_arg(const TVMFFIAny* args, const char* fn) {
  KilnVM* vm = args[0].type_index == kTVMFFIOpaquePtr ? (KilnVM*)args[0].v_ptr : NULL;
  if (vm == NULL || vm->hdr.magic != KILN_VM_CTX_MAGIC) {
    kvm_fail("TypeError", "%s: argument 0 must be the VM context, got %s", fn,
             kvm_kind_name(args[0].type_index));
    return NULL;
  }
  if (vm->hdr.abi_version != KILN_VM_ABI_VERSION) {
    kvm_fail("RuntimeError", "%s: VM context ABI %u, this runtime has ABI %d", fn,
             vm->hdr.abi_version, KILN_VM_ABI_VERSION);
    return NULL;
  }
  return vm;
}

/* ---- memory ------------------------------------------------------------------------------- */

/* One malloc block: the DLPack header and shape, then the data at the next 64-byte boundary.
 * NOTE: plain malloc plus manual alignment; posix_memalign was a third of the VM's own time in
 * a 2-kernel call (glibc splits and merges chunks to align them). */
typedef struct {
  DLManagedTensorVersioned m;
  int64_t shape[1]; /* really ndim entries */
} KvmBlock;

static void kvm_block_deleter(DLManagedTensorVersioned* m) { free(m); }

/* A new tensor owning its memory on `dev` (CPU only); `zero` clears the data. */
static int kvm_alloc(DLDevice dev, const int64_t* dims, int64_t ndim, DLDataType dtype, int zero,
                     TVMFFIAny* ret) {
  int64_t nbytes = kvm_prod(dims, ndim) * kvm_itemsize(dtype);
  size_t head = sizeof(KvmBlock) + sizeof(int64_t) * (size_t)ndim;
  char* p;
  char* data;
  KvmBlock* b;
  TVMFFIObjectHandle out;
  if (dev.device_type != kDLCPU) {
    return kvm_fail("RuntimeError",
                    "the kiln VM allocates CPU memory only; device type %d is not supported yet",
                    (int)dev.device_type);
  }
  for (int64_t i = 0; i < ndim; ++i) {
    if (dims[i] < 0) return kvm_fail("ValueError", "cannot allocate a negative dimension");
  }
  p = (char*)malloc(head + KVM_ALIGN + (size_t)nbytes);
  if (p == NULL) {
    return kvm_fail("MemoryError", "the kiln VM could not allocate %lld bytes",
                    (long long)nbytes);
  }
  data = (char*)(((uintptr_t)(p + head) + KVM_ALIGN - 1) & ~(uintptr_t)(KVM_ALIGN - 1));
  b = (KvmBlock*)p;
  memset(b, 0, sizeof(KvmBlock));
  memcpy(b->shape, dims, sizeof(int64_t) * (size_t)ndim);
  b->m.version.major = DLPACK_MAJOR_VERSION;
  b->m.version.minor = DLPACK_MINOR_VERSION;
  b->m.deleter = kvm_block_deleter;
  b->m.dl_tensor.data = data;
  b->m.dl_tensor.device = dev;
  b->m.dl_tensor.ndim = (int32_t)ndim;
  b->m.dl_tensor.dtype = dtype;
  b->m.dl_tensor.shape = b->shape;
  if (zero) memset(data, 0, (size_t)nbytes);
  if (TVMFFITensorFromDLPackVersioned(&b->m, 0, 0, &out) != 0) return -1;
  kvm_set_obj(ret, out);
  return 0;
}

/* alloc_storage(ctx, size: shape | int, device_index=0, dtype_hint=uint8, scope="global"):
 * a 1-D uint8 tensor of prod(size) * itemsize(dtype_hint) bytes. */
KVM_BUILTIN(kvm_b_alloc_storage) {
  static const char* fn = "vm.builtin.alloc_storage";
  const int64_t* dims = NULL;
  int64_t ndim = 0, nbytes, dev = 0, one;
  DLDataType hint = {kDLUInt, 8, 1};
  KilnVM* vm;
  (void)self;
  if (kvm_nargs(fn, n, 2, 5) != 0 || (vm = kvm_ctx_arg(args, fn)) == NULL) return -1;
  if (args[1].type_index == kTVMFFIInt) {
    one = args[1].v_int64;
    dims = &one;
    ndim = 1;
  } else if (kvm_shape_arg(args, 1, fn, "size", &dims, &ndim) != 0) {
    return -1;
  }
  if (n > 2 && kvm_int_arg(args, 2, fn, "device_index", &dev) != 0) return -1;
  if (n > 3 && args[3].type_index != kTVMFFINone &&
      kvm_dtype_arg(args, 3, fn, "dtype_hint", &hint) != 0) {
    return -1;
  }
  if (dev != 0) {
    return kvm_fail("ValueError", "%s: device index %lld, but the VM has one device (index 0)",
                    fn, (long long)dev);
  }
  nbytes = kvm_prod(dims, ndim) * kvm_itemsize(hint);
  {
    DLDataType u8 = {kDLUInt, 8, 1};
    return kvm_alloc(vm->device, &nbytes, 1, u8, 0, ret);
  }
}

/* A view of `source` (a tensor object) with `proto`'s data, shape and dtype, compact strides. */
static int kvm_view(TVMFFIObject* source, DLTensor* proto, TVMFFIAny* ret) {
  int64_t strides[KVM_MAX_DIMS];
  int64_t expect = 1;
  TVMFFIObjectHandle out;
  if (proto->ndim > KVM_MAX_DIMS) {
    return kvm_fail("ValueError", "tensors have at most %d dims, got %d", KVM_MAX_DIMS,
                    proto->ndim);
  }
  for (int32_t d = proto->ndim - 1; d >= 0; --d) {
    strides[d] = expect;
    expect *= proto->shape[d];
  }
  proto->strides = strides; /* TVMFFITensorCreateUnsafeView copies shape and strides */
  if (TVMFFITensorCreateUnsafeView(source, proto, &out) != 0) return -1;
  kvm_set_obj(ret, out);
  return 0;
}

/* alloc_tensor(storage, offset, shape, dtype): a tensor viewing storage bytes [offset, ...). */
KVM_BUILTIN(kvm_b_alloc_tensor) {
  static const char* fn = "vm.builtin.alloc_tensor";
  DLTensor* st;
  DLTensor proto;
  const int64_t* dims = NULL;
  int64_t ndim = 0, offset = 0, need, have;
  DLDataType dtype = {0, 0, 0};
  (void)self;
  if (kvm_nargs(fn, n, 4, 4) != 0 || kvm_int_arg(args, 1, fn, "offset", &offset) != 0 ||
      kvm_shape_arg(args, 2, fn, "shape", &dims, &ndim) != 0 ||
      kvm_dtype_arg(args, 3, fn, "dtype", &dtype) != 0) {
    return -1;
  }
  if (args[0].type_index != kTVMFFITensor) {
    return kvm_fail("TypeError", "%s: argument 0 (storage) expected a tensor, got %s", fn,
                    kvm_kind_name(args[0].type_index));
  }
  st = kvm_dltensor(&args[0]);
  have = kvm_prod(st->shape, st->ndim) * kvm_itemsize(st->dtype);
  need = kvm_prod(dims, ndim) * kvm_itemsize(dtype);
  if (offset < 0 || need < 0 || offset + need > have) {
    char shape[256], dt[64];
    kvm_dims_str(dims, ndim, shape, sizeof(shape));
    kvm_dtype_str(dtype, dt, sizeof(dt));
    return kvm_fail("ValueError",
                    "%s: a %s tensor of shape %s at offset %lld needs %lld bytes; the storage "
                    "has %lld",
                    fn, dt, shape, (long long)offset, (long long)need, (long long)have);
  }
  memset(&proto, 0, sizeof(proto));
  proto.data = (char*)st->data + st->byte_offset + offset;
  proto.device = st->device;
  proto.ndim = (int32_t)ndim;
  proto.dtype = dtype;
  proto.shape = (int64_t*)dims;
  return kvm_view(args[0].v_obj, &proto, ret);
}

/* empty(ctx, shape, dtype, device_index=0): a tensor with storage of its own. */
KVM_BUILTIN(kvm_b_empty) {
  static const char* fn = "vm.builtin.empty";
  const int64_t* dims = NULL;
  int64_t ndim = 0, dev = 0;
  DLDataType dtype = {0, 0, 0};
  KilnVM* vm;
  (void)self;
  if (kvm_nargs(fn, n, 3, 4) != 0 || (vm = kvm_ctx_arg(args, fn)) == NULL ||
      kvm_shape_arg(args, 1, fn, "shape", &dims, &ndim) != 0 ||
      kvm_dtype_arg(args, 2, fn, "dtype", &dtype) != 0 ||
      (n > 3 && kvm_int_arg(args, 3, fn, "device_index", &dev) != 0)) {
    return -1;
  }
  if (dev != 0) {
    return kvm_fail("ValueError", "%s: device index %lld, but the VM has one device (index 0)",
                    fn, (long long)dev);
  }
  return kvm_alloc(vm->device, dims, ndim, dtype, 0, ret);
}

/* alloc_shape_heap(ctx, size): a zeroed int64 tensor of `size` slots for symbolic dims. */
KVM_BUILTIN(kvm_b_alloc_shape_heap) {
  static const char* fn = "vm.builtin.alloc_shape_heap";
  int64_t size = 0;
  DLDataType i64 = {kDLInt, 64, 1};
  KilnVM* vm;
  (void)self;
  if (kvm_nargs(fn, n, 2, 2) != 0 || (vm = kvm_ctx_arg(args, fn)) == NULL ||
      kvm_int_arg(args, 1, fn, "size", &size) != 0) {
    return -1;
  }
  return kvm_alloc(vm->device, &size, 1, i64, 1, ret);
}

/* ---- tuples and closures ------------------------------------------------------------------ */

KVM_BUILTIN(kvm_b_make_tuple) {
  (void)self;
  return kvm_make_array(args, n, ret);
}

KVM_BUILTIN(kvm_b_tuple_getitem) {
  static const char* fn = "vm.builtin.tuple_getitem";
  TVMFFISeqCell* cell;
  int64_t i = 0;
  (void)self;
  if (kvm_nargs(fn, n, 2, 2) != 0 || kvm_int_arg(args, 1, fn, "index", &i) != 0) return -1;
  cell = kvm_seq_cell(&args[0]);
  if (cell == NULL) {
    return kvm_fail("TypeError", "%s: argument 0 expected a tuple, got %s", fn,
                    kvm_kind_name(args[0].type_index));
  }
  if (i < 0 || i >= cell->size) {
    return kvm_fail("IndexError", "%s: index %lld out of range for a tuple of %lld items", fn,
                    (long long)i, (long long)cell->size);
  }
  return kvm_own(&((TVMFFIAny*)cell->data)[i], ret);
}

/* A closure: a function plus the values it captured, called as func(*captured, *args). */
typedef struct {
  int32_t n;
  TVMFFIAny func;
  TVMFFIAny captured[];
} KvmClosure;

static void kvm_closure_free(void* self) {
  KvmClosure* c = (KvmClosure*)self;
  kiln_vm_any_release(&c->func);
  for (int32_t i = 0; i < c->n; ++i) kiln_vm_any_release(&c->captured[i]);
  free(c);
}

static int kvm_closure_call(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  KvmClosure* c = (KvmClosure*)self;
  int32_t total = c->n + n;
  TVMFFIAny small[KVM_SMALL];
  TVMFFIAny* argv = total <= KVM_SMALL ? small : (TVMFFIAny*)malloc(sizeof(TVMFFIAny) * total);
  int rc;
  if (argv == NULL) return kvm_fail("MemoryError", "closure call: out of memory");
  memcpy(argv, c->captured, sizeof(TVMFFIAny) * (size_t)c->n);
  if (n > 0) memcpy(argv + c->n, args, sizeof(TVMFFIAny) * (size_t)n);
  rc = kvm_call_function(c->func.v_obj, argv, total, ret);
  if (argv != small) free(argv);
  return rc;
}

/* make_closure(func, *captured) -> a function. */
KVM_BUILTIN(kvm_b_make_closure) {
  static const char* fn = "vm.builtin.make_closure";
  KvmClosure* c;
  TVMFFIObjectHandle out;
  (void)self;
  if (kvm_nargs(fn, n, 1, -1) != 0) return -1;
  if (args[0].type_index != kTVMFFIFunction) {
    return kvm_fail("TypeError", "%s: argument 0 expected a function, got %s", fn,
                    kvm_kind_name(args[0].type_index));
  }
  c = (KvmClosure*)calloc(1, sizeof(KvmClosure) + sizeof(TVMFFIAny) * (size_t)(n - 1));
  if (c == NULL) return kvm_fail("MemoryError", "%s: out of memory", fn);
  kvm_own(&args[0], &c->func);
  for (int32_t i = 1; i < n; ++i) {
    if (kvm_own(&args[i], &c->captured[c->n]) != 0) {
      kvm_closure_free(c);
      return -1;
    }
    c->n++;
  }
  if (TVMFFIFunctionCreate(c, kvm_closure_call, kvm_closure_free, &out) != 0) {
    kvm_closure_free(c);
    return -1;
  }
  kvm_set_obj(ret, out);
  return 0;
}

/* invoke_closure(ctx, closure, *args) -> closure(*args). */
KVM_BUILTIN(kvm_b_invoke_closure) {
  static const char* fn = "vm.builtin.invoke_closure";
  (void)self;
  if (kvm_nargs(fn, n, 2, -1) != 0 || kvm_ctx_arg(args, fn) == NULL) return -1;
  if (args[1].type_index != kTVMFFIFunction) {
    return kvm_fail("TypeError", "%s: argument 1 expected a function or closure, got %s", fn,
                    kvm_kind_name(args[1].type_index));
  }
  return kvm_call_function(args[1].v_obj, args + 2, n - 2, ret);
}

/* call_tir_dyn(func, *args, shape) -> func(*args, *shape): a kernel with symbolic int params. */
KVM_BUILTIN(kvm_b_call_tir_dyn) {
  static const char* fn = "vm.builtin.call_tir_dyn";
  const int64_t* dims = NULL;
  int64_t ndim = 0;
  int32_t total;
  TVMFFIAny small[KVM_SMALL];
  TVMFFIAny* argv;
  int rc;
  (void)self;
  if (kvm_nargs(fn, n, 2, -1) != 0 || kvm_shape_arg(args, n - 1, fn, "shape", &dims, &ndim)) {
    return -1;
  }
  if (args[0].type_index != kTVMFFIFunction) {
    return kvm_fail("TypeError", "%s: argument 0 expected a function, got %s", fn,
                    kvm_kind_name(args[0].type_index));
  }
  total = (int32_t)(n - 2 + ndim);
  argv = total <= KVM_SMALL ? small : (TVMFFIAny*)malloc(sizeof(TVMFFIAny) * (size_t)total);
  if (argv == NULL) return kvm_fail("MemoryError", "%s: out of memory", fn);
  memcpy(argv, args + 1, sizeof(TVMFFIAny) * (size_t)(n - 2));
  for (int64_t i = 0; i < ndim; ++i) kvm_set_int(&argv[n - 2 + i], dims[i]);
  rc = kvm_call_function(args[0].v_obj, argv, total, ret);
  if (argv != small) free(argv);
  return rc;
}

/* call_memoized(ctx, func, dims) -> func(dims), called once per distinct dims: a value that
 * depends only on the model's dims (a causal mask, position ids, rotary tables) is computed the
 * first time those dims are seen and returned again after (the last KVM_MEMO_SLOTS results are
 * kept). The caller never writes the value (kiln.relax.transform.hoist_dims_only). */
KVM_BUILTIN(kvm_b_call_memoized) {
  static const char* fn = "vm.builtin.call_memoized";
  const int64_t* dims = NULL;
  int64_t ndim = 0;
  KilnVM* vm;
  KvmMemo* slot;
  TVMFFIAny shape;
  int rc;
  (void)self;
  if (kvm_nargs(fn, n, 3, 3) != 0 || (vm = kvm_ctx_arg(args, fn)) == NULL ||
      kvm_shape_arg(args, 2, fn, "dims", &dims, &ndim) != 0) {
    return -1;
  }
  if (args[1].type_index != kTVMFFIFunction) {
    return kvm_fail("TypeError", "%s: argument 1 expected a function, got %s", fn,
                    kvm_kind_name(args[1].type_index));
  }
  for (int64_t i = 0; i < KVM_MEMO_SLOTS; ++i) {
    KvmMemo* m = &vm->memo[i];
    if (m->func == args[1].v_obj && m->ndim == ndim &&
        memcmp(m->dims, dims, sizeof(int64_t) * (size_t)ndim) == 0) {
      return kvm_own(&m->value, ret);
    }
  }
  rc = kvm_call_function(args[1].v_obj, args + 2, 1, ret);
  if (rc != 0 || ndim > KVM_MEMO_DIMS) return rc;
  slot = &vm->memo[vm->memo_next];
  vm->memo_next = (vm->memo_next + 1) % KVM_MEMO_SLOTS;
  kiln_vm_any_release(&slot->value);
  slot->func = NULL;
  if (kvm_own(ret, &shape) != 0) return -1;
  slot->value = shape;
  slot->func = args[1].v_obj;
  slot->ndim = ndim;
  memcpy(slot->dims, dims, sizeof(int64_t) * (size_t)ndim);
  return 0;
}

/* ---- values ------------------------------------------------------------------------------- */

/* read_if_cond(x) -> bool: x is an int, a bool, or a one-element CPU tensor. */
KVM_BUILTIN(kvm_b_read_if_cond) {
  static const char* fn = "vm.builtin.read_if_cond";
  DLTensor* t;
  int64_t v = 0;
  (void)self;
  if (kvm_nargs(fn, n, 1, 1) != 0) return -1;
  if (args[0].type_index == kTVMFFIInt || args[0].type_index == kTVMFFIBool) {
    v = args[0].v_int64 != 0;
  } else if ((t = kvm_dltensor(&args[0])) != NULL && t->device.device_type == kDLCPU &&
             kvm_prod(t->shape, t->ndim) == 1 && t->dtype.lanes == 1) {
    const char* p = (const char*)t->data + t->byte_offset;
    int bits = t->dtype.bits;
    if (t->dtype.code == kDLFloat && bits == 32) {
      v = *(const float*)p != 0.0f;
    } else if (t->dtype.code == kDLFloat && bits == 64) {
      v = *(const double*)p != 0.0;
    } else if ((t->dtype.code == kDLInt || t->dtype.code == kDLUInt || t->dtype.code == kDLBool) &&
               (bits == 8 || bits == 16 || bits == 32 || bits == 64 || bits == 1)) {
      for (int i = 0; i < (bits + 7) / 8; ++i) v |= p[i] != 0;
    } else {
      char dt[64];
      kvm_dtype_str(t->dtype, dt, sizeof(dt));
      return kvm_fail("TypeError", "%s: cannot read a %s tensor as a condition", fn, dt);
    }
  } else {
    return kvm_fail("TypeError",
                    "%s: expected an int, a bool or a one-element CPU tensor, got %s", fn,
                    kvm_kind_name(args[0].type_index));
  }
  ret->type_index = kTVMFFIBool;
  ret->zero_padding = 0;
  ret->v_int64 = v;
  return 0;
}

KVM_BUILTIN(kvm_b_copy) {
  (void)self;
  if (kvm_nargs("vm.builtin.copy", n, 1, 1) != 0) return -1;
  return kvm_own(&args[0], ret);
}

KVM_BUILTIN(kvm_b_null_value) {
  (void)self;
  (void)args;
  if (kvm_nargs("vm.builtin.null_value", n, 0, 0) != 0) return -1;
  kvm_set_none(ret);
  return 0;
}

/* random_seed() -> int: the next value of a process-wide counter (0, 1, 2, ...), so that each
 * call of a random-number kernel gets a seed of its own and the kernels stay pure functions of
 * their arguments (kiln/relax/op/random.py hashes the seed; the counter is never reused within
 * a process, whichever model or thread asks). */
KVM_BUILTIN(kvm_b_random_seed) {
  static int64_t next = 0;
  (void)self;
  (void)args;
  if (kvm_nargs("vm.builtin.random_seed", n, 0, 0) != 0) return -1;
  kvm_set_int(ret, __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED));
  return 0;
}

/* shape_of(tensor) -> shape. */
KVM_BUILTIN(kvm_b_shape_of) {
  static const char* fn = "vm.builtin.shape_of";
  DLTensor* t;
  (void)self;
  if (kvm_nargs(fn, n, 1, 1) != 0 || kvm_tensor_arg(args, 0, fn, "tensor", &t) != 0) return -1;
  return kvm_make_shape(t->shape, t->ndim, ret);
}

/* tensor_to_shape(tensor) -> shape, from a 1-D int32/int64 CPU tensor. */
KVM_BUILTIN(kvm_b_tensor_to_shape) {
  static const char* fn = "vm.builtin.tensor_to_shape";
  DLTensor* t;
  int64_t dims[KVM_MAX_DIMS];
  const char* p;
  (void)self;
  if (kvm_nargs(fn, n, 1, 1) != 0 || kvm_tensor_arg(args, 0, fn, "tensor", &t) != 0) return -1;
  if (t->ndim != 1 || t->dtype.code != kDLInt || (t->dtype.bits != 32 && t->dtype.bits != 64) ||
      t->dtype.lanes != 1 || t->device.device_type != kDLCPU || t->shape[0] > KVM_MAX_DIMS) {
    return kvm_fail("TypeError", "%s: expected a 1-D int32 or int64 CPU tensor", fn);
  }
  p = (const char*)t->data + t->byte_offset;
  for (int64_t i = 0; i < t->shape[0]; ++i) {
    int64_t stride = t->strides != NULL ? t->strides[0] : 1;
    dims[i] = t->dtype.bits == 64 ? ((const int64_t*)p)[i * stride]
                                  : ((const int32_t*)p)[i * stride];
  }
  return kvm_make_shape(dims, t->shape[0], ret);
}

static int kvm_is_compact(const DLTensor* t) {
  int64_t expect = 1;
  if (t->strides == NULL) return 1;
  for (int32_t d = t->ndim - 1; d >= 0; --d) {
    if (t->shape[d] != 1 && t->strides[d] != expect) return 0;
    expect *= t->shape[d];
  }
  return 1;
}

/* reshape(tensor, shape) -> a view of the same memory with another shape. */
KVM_BUILTIN(kvm_b_reshape) {
  static const char* fn = "vm.builtin.reshape";
  DLTensor* t;
  DLTensor proto;
  const int64_t* dims = NULL;
  int64_t ndim = 0;
  (void)self;
  if (kvm_nargs(fn, n, 2, 2) != 0 || kvm_shape_arg(args, 1, fn, "shape", &dims, &ndim) != 0) {
    return -1;
  }
  if (args[0].type_index != kTVMFFITensor) {
    return kvm_fail("TypeError", "%s: argument 0 expected a tensor, got %s", fn,
                    kvm_kind_name(args[0].type_index));
  }
  t = kvm_dltensor(&args[0]);
  if (kvm_prod(dims, ndim) != kvm_prod(t->shape, t->ndim) || !kvm_is_compact(t)) {
    char from[256], to[256];
    kvm_dims_str(t->shape, t->ndim, from, sizeof(from));
    kvm_dims_str(dims, ndim, to, sizeof(to));
    return kvm_fail("ValueError", "%s: cannot reshape a %stensor of shape %s to %s", fn,
                    kvm_is_compact(t) ? "" : "non-contiguous ", from, to);
  }
  proto = *t;
  proto.ndim = (int32_t)ndim;
  proto.shape = (int64_t*)dims;
  return kvm_view(args[0].v_obj, &proto, ret);
}
