/* kiln VM runtime, part 5 of 5: creating and freeing a VM, its Python-facing handle, and the two
 * exported symbols: `__tvm_ffi_kiln_vm_init`, which registers the builtins and `kiln.vm.create`,
 * and `__tvm_ffi___kiln_vm_info`, which only says what this copy implements.
 *
 * kiln.vm.create(code, meta, names, params, impls, consts, device, entries) -> handle, where
 *   code:   1-D int64 tensor, the encoded instruction stream (or None when empty);
 *   meta:   5 ints per function: kind, number of params, number of registers, start, end;
 *   names:  function names; params: their parameter names joined by ", " (for errors);
 *   impls:  per function the tvm-ffi Function (packed, kernel, or the library's __vmtir__ entry
 *           for a compiled VM function), None for bytecode functions;
 *   consts: the constant pool; device: the device the VM allocates on;
 *   entries: per function the address of its unchecked C function (`__vmtir_entry__<name>()`
 *           of the library, for a compiled VM function), else None.
 * handle("function", i) -> the Function of table entry i; handle("profile_start");
 * handle("profile_stop") -> ((callee, calls, total ns), ...).
 */

static void kvm_free(void* self) {
  KilnVM* vm = (KilnVM*)self;
  if (vm == NULL) return;
  for (int64_t i = 0; i < vm->num_funcs; ++i) {
    if (vm->selves != NULL && vm->selves[i] != NULL) vm->selves[i]->vm = NULL;
  }
  for (int64_t i = 0; i < vm->num_funcs; ++i) {
    if (vm->f != NULL) kiln_vm_any_release(&vm->f[i]);
    if (vm->impls != NULL) kiln_vm_any_release(&vm->impls[i]);
    if (vm->funcs != NULL) {
      free(vm->funcs[i].name);
      free(vm->funcs[i].params);
    }
  }
  for (int64_t i = 0; vm->c != NULL && i < vm->num_consts; ++i) kiln_vm_any_release(&vm->c[i]);
  for (int64_t i = 0; i < KVM_MEMO_SLOTS; ++i) kiln_vm_any_release(&vm->memo[i].value);
  kvm_prof_clear(vm);
  free(vm->prof);
  free(vm->funcs);
  free(vm->selves);
  free(vm->f);
  free(vm->impls);
  free(vm->entries);
  free(vm->c);
  free(vm->code);
  free(vm->arg_pool);
  free(vm);
}

static int kvm_handle_call(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  KilnVM* vm = (KilnVM*)self;
  const char* cmd;
  int len;
  if (n < 1 || !kvm_str(&args[0], &cmd, &len)) {
    return kvm_fail("TypeError", "kiln VM handle: the first argument must be a command");
  }
  if (len == 8 && memcmp(cmd, "function", 8) == 0) {
    int64_t i = 0;
    if (kvm_nargs("kiln VM handle(function)", n, 2, 2) != 0 ||
        kvm_int_arg(args, 1, "kiln VM handle(function)", "index", &i) != 0) {
      return -1;
    }
    if (i < 0 || i >= vm->num_funcs) {
      return kvm_fail("IndexError", "kiln VM handle: no function %lld", (long long)i);
    }
    return kvm_own(&vm->f[i], ret);
  }
  if (len == 13 && memcmp(cmd, "profile_start", 13) == 0) {
    kvm_prof_clear(vm);
    vm->hdr.profiling = 1;
    kvm_set_none(ret);
    return 0;
  }
  if (len == 12 && memcmp(cmd, "profile_stop", 12) == 0) {
    vm->hdr.profiling = 0;
    return kvm_prof_report(vm, ret);
  }
  return kvm_fail("ValueError", "kiln VM handle: unknown command %.*s", len, cmd);
}

static int kvm_seq_arg(const TVMFFIAny* args, int i, const char* what, TVMFFISeqCell** out,
                       int64_t want) {
  *out = kvm_seq_cell(&args[i]);
  if (*out == NULL || (want >= 0 && (*out)->size != want)) {
    return kvm_fail("TypeError", "kiln.vm.create: argument %d (%s) has the wrong kind or size",
                    i, what);
  }
  return 0;
}

/* Fill the function table entry i from the creation arguments. */
static int kvm_init_func(KilnVM* vm, int64_t i, const TVMFFIAny* meta, const TVMFFIAny* names,
                         const TVMFFIAny* params, const TVMFFIAny* impl) {
  KvmFunc* fn = &vm->funcs[i];
  int64_t v[5];
  for (int k = 0; k < 5; ++k) {
    if (meta[5 * i + k].type_index != kTVMFFIInt) {
      return kvm_fail("TypeError", "kiln.vm.create: function metadata must be ints");
    }
    v[k] = meta[5 * i + k].v_int64;
  }
  fn->kind = (int32_t)v[0];
  fn->num_params = (int32_t)v[1];
  fn->num_regs = v[2];
  fn->start = v[3];
  fn->end = v[4];
  fn->name = kvm_strdup_arg(&names[i]);
  fn->params = kvm_strdup_arg(&params[i]);
  if (fn->name == NULL || fn->params == NULL) {
    return kvm_fail("TypeError", "kiln.vm.create: function names must be strings");
  }
  if (fn->kind == KVM_FUNC_BYTECODE) return 0;
  if (impl->type_index != kTVMFFIFunction) {
    return kvm_fail("TypeError", "kiln.vm.create: function %s has no implementation", fn->name);
  }
  return kvm_own(impl, fn->kind == KVM_FUNC_VMTIR ? &vm->impls[i] : &vm->f[i]);
}

/* The f-list entry of a VM function: a Function calling back into this VM. */
static int kvm_make_vmfunc(KilnVM* vm, int64_t i) {
  KvmFuncSelf* s = (KvmFuncSelf*)calloc(1, sizeof(KvmFuncSelf));
  TVMFFIObjectHandle h;
  if (s == NULL || (s->name = strdup(vm->funcs[i].name)) == NULL) {
    free(s);
    return kvm_fail("MemoryError", "kiln.vm.create: out of memory");
  }
  s->vm = vm;
  s->index = i;
  if (TVMFFIFunctionCreate(s, kvm_vmfunc_call, kvm_funcself_free, &h) != 0) {
    kvm_funcself_free(s);
    return -1;
  }
  vm->selves[i] = s;
  kvm_set_obj(&vm->f[i], h);
  return 0;
}

static int kvm_build(KilnVM* vm, const TVMFFIAny* args) {
  TVMFFISeqCell *meta, *names, *params, *impls, *consts, *entries;
  DLTensor* code = kvm_dltensor(&args[0]);
  int64_t nf;
  if (kvm_seq_arg(args, 2, "names", &names, -1) != 0) return -1;
  nf = names->size;
  if (kvm_seq_arg(args, 1, "meta", &meta, 5 * nf) != 0 ||
      kvm_seq_arg(args, 3, "params", &params, nf) != 0 ||
      kvm_seq_arg(args, 4, "impls", &impls, nf) != 0 ||
      kvm_seq_arg(args, 5, "consts", &consts, -1) != 0 ||
      kvm_seq_arg(args, 7, "entries", &entries, nf) != 0) {
    return -1;
  }
  if (args[6].type_index != kTVMFFIDevice) {
    return kvm_fail("TypeError", "kiln.vm.create: argument 6 must be a device");
  }
  vm->device = args[6].v_device;
  vm->num_funcs = nf;
  vm->num_consts = consts->size;
  vm->funcs = (KvmFunc*)calloc((size_t)nf + 1, sizeof(KvmFunc));
  vm->selves = (KvmFuncSelf**)calloc((size_t)nf + 1, sizeof(KvmFuncSelf*));
  vm->f = (TVMFFIAny*)calloc((size_t)nf + 1, sizeof(TVMFFIAny));
  vm->impls = (TVMFFIAny*)calloc((size_t)nf + 1, sizeof(TVMFFIAny));
  vm->entries = (KvmEntry*)calloc((size_t)nf + 1, sizeof(KvmEntry));
  vm->c = (TVMFFIAny*)calloc((size_t)consts->size + 1, sizeof(TVMFFIAny));
  if (!vm->funcs || !vm->selves || !vm->f || !vm->impls || !vm->entries || !vm->c) {
    return kvm_fail("MemoryError", "kiln.vm.create: out of memory");
  }
  for (int64_t i = 0; i < nf; ++i) {
    if (kvm_init_func(vm, i, (TVMFFIAny*)meta->data, (TVMFFIAny*)names->data,
                      (TVMFFIAny*)params->data, &((TVMFFIAny*)impls->data)[i]) != 0) {
      return -1;
    }
    if (vm->funcs[i].kind == KVM_FUNC_VMTIR &&
        ((TVMFFIAny*)entries->data)[i].type_index == kTVMFFIOpaquePtr) {
      vm->entries[i] = (KvmEntry)((TVMFFIAny*)entries->data)[i].v_ptr;
    }
  }
  if (code != NULL) {
    if (code->ndim != 1 || code->dtype.code != kDLInt || code->dtype.bits != 64 ||
        code->device.device_type != kDLCPU || !kvm_is_compact(code)) {
      return kvm_fail("TypeError", "kiln.vm.create: code must be a 1-D int64 CPU tensor");
    }
    if (kvm_decode(vm, (const int64_t*)((char*)code->data + code->byte_offset), code->shape[0])) {
      return -1;
    }
  } else if (kvm_decode(vm, NULL, 0) != 0) {
    return -1;
  }
  for (int64_t i = 0; i < consts->size; ++i) {
    if (kvm_own(&((TVMFFIAny*)consts->data)[i], &vm->c[i]) != 0) return -1;
  }
  if (kvm_validate(vm) != 0) return -1;
  for (int64_t i = 0; i < nf; ++i) {
    int32_t kind = vm->funcs[i].kind;
    if ((kind == KVM_FUNC_BYTECODE || kind == KVM_FUNC_VMTIR) && kvm_make_vmfunc(vm, i) != 0) {
      return -1;
    }
  }
  return 0;
}

static int kvm_create(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  KilnVM* vm;
  TVMFFIObjectHandle h;
  (void)self;
  if (kvm_nargs("kiln.vm.create", n, 8, 8) != 0) return -1;
  vm = (KilnVM*)calloc(1, sizeof(KilnVM));
  if (vm == NULL) return kvm_fail("MemoryError", "kiln.vm.create: out of memory");
  vm->hdr.magic = KILN_VM_CTX_MAGIC;
  vm->hdr.abi_version = KILN_VM_ABI_VERSION;
  vm->hdr.now_ns = kvm_now_ns;
  vm->hdr.record = kvm_record;
  vm->hdr.builtins = kvm_builtin_fns;
  vm->hdr.num_builtins = KVM_NUM_BUILTINS;
  if (kvm_build(vm, args) != 0 || TVMFFIFunctionCreate(vm, kvm_handle_call, kvm_free, &h) != 0) {
    kvm_free(vm);
    return -1;
  }
  kvm_set_obj(ret, h);
  return 0;
}

static int kvm_register(const char* name, TVMFFISafeCallType fn) {
  TVMFFIObjectHandle h;
  TVMFFIByteArray bytes;
  int rc;
  if (TVMFFIFunctionCreate(NULL, fn, NULL, &h) != 0) return -1;
  bytes.data = name;
  bytes.size = strlen(name);
  rc = TVMFFIFunctionSetGlobal(&bytes, h, 1);
  TVMFFIObjectDecRef(h);
  return rc;
}

/* (format version, ABI version, builtin names in table order): what this copy of the runtime
 * implements; no side effect. */
static int kvm_info(TVMFFIAny* ret) {
  TVMFFIAny out[3], names[sizeof(kvm_builtins) / sizeof(kvm_builtins[0])];
  int rc;
  for (int64_t i = 0; i < KVM_NUM_BUILTINS; ++i) {
    names[i].type_index = kTVMFFIRawStr;
    names[i].zero_padding = 0;
    names[i].v_c_str = kvm_builtins[i].name;
  }
  kvm_set_int(&out[0], KVM_FORMAT_VERSION);
  kvm_set_int(&out[1], KILN_VM_ABI_VERSION);
  if (kvm_make_array(names, (int32_t)KVM_NUM_BUILTINS, &out[2]) != 0) return -1;
  rc = kvm_make_array(out, 3, ret);
  kiln_vm_any_release(&out[2]);
  return rc;
}

/* `kvm_info` alone: a library carrying a copy of the runtime that the process does not use is
 * checked with this (kiln/runtime/vm_runtime.py), never initialized. */
TVM_FFI_DLL_EXPORT int __tvm_ffi___kiln_vm_info(void* self, const TVMFFIAny* args, int32_t n,
                                                TVMFFIAny* ret) {
  (void)self;
  (void)args;
  if (kvm_nargs("__kiln_vm_info", n, 0, 0) != 0) return -1;
  return kvm_info(ret);
}

/* Register every builtin and kiln.vm.create (again, harmlessly, when called twice); returns
 * `kvm_info`. */
TVM_FFI_DLL_EXPORT int __tvm_ffi_kiln_vm_init(void* self, const TVMFFIAny* args, int32_t n,
                                              TVMFFIAny* ret) {
  (void)self;
  (void)args;
  (void)n;
  for (int64_t i = 0; i < KVM_NUM_BUILTINS; ++i) {
    if (kvm_register(kvm_builtins[i].name, kvm_builtins[i].fn) != 0) return -1;
    kvm_builtin_fns[i] = kvm_builtins[i].fn;
  }
  if (kvm_register("kiln.vm.create", kvm_create) != 0) return -1;
  return kvm_info(ret);
}
