/* kiln VM runtime, part 4 of 5: profiling records, the bytecode interpreter, and decoding and
 * validating an instruction stream.
 *
 * Calling a VM function makes a register frame, copies the arguments into registers 0..n-1 and
 * runs the bytecode, or calls the library's `__vmtir__<name>(ctx, r, c, f)` and takes the result
 * from register n (compiled mode).
 */

#define KVM_FORMAT_VERSION 2 /* kiln/runtime/vm_format.py VM_FORMAT_VERSION */

/* ---- profiling ---------------------------------------------------------------------------- */

/* The table name of the kernel `call_tir_dyn(kernel, ...)` calls (NULL when not in the table). */
static const char* kvm_dyn_kernel_name(KilnVM* vm, const TVMFFIAny* args) {
  if (args == NULL || args[0].type_index != kTVMFFIFunction) return NULL;
  for (int64_t i = 0; i < vm->num_funcs; ++i) {
    if (vm->f[i].type_index == kTVMFFIFunction && vm->f[i].v_obj == args[0].v_obj) {
      return vm->funcs[i].name;
    }
  }
  return NULL;
}

/* One timed call: a kernel or packed function by name; a kernel with symbolic int parameters
 * (called through vm.builtin.call_tir_dyn) by the kernel's name; other builtins are not kept. */
static void kvm_record(void* ctx, const char* name, const TVMFFIAny* args, int64_t ns) {
  KilnVM* vm = (KilnVM*)ctx;
  KvmProf* p;
  if (strcmp(name, "vm.builtin.call_tir_dyn") == 0) name = kvm_dyn_kernel_name(vm, args);
  if (name == NULL || strncmp(name, "vm.builtin.", 11) == 0) return;
  for (int64_t i = 0; i < vm->num_prof; ++i) {
    if (strcmp(vm->prof[i].name, name) == 0) {
      vm->prof[i].calls += 1;
      vm->prof[i].ns += ns;
      return;
    }
  }
  if (vm->num_prof == vm->cap_prof) {
    int64_t cap = vm->cap_prof ? vm->cap_prof * 2 : 16;
    KvmProf* grown = (KvmProf*)realloc(vm->prof, sizeof(KvmProf) * (size_t)cap);
    if (grown == NULL) return;
    vm->prof = grown;
    vm->cap_prof = cap;
  }
  p = &vm->prof[vm->num_prof];
  p->name = strdup(name);
  if (p->name == NULL) return;
  p->calls = 1;
  p->ns = ns;
  vm->num_prof++;
}

static void kvm_prof_clear(KilnVM* vm) {
  for (int64_t i = 0; i < vm->num_prof; ++i) free(vm->prof[i].name);
  vm->num_prof = 0;
}

/* The records as a tuple of (name, calls, total ns) tuples. */
static int kvm_prof_report(KilnVM* vm, TVMFFIAny* ret) {
  TVMFFIAny* rows = (TVMFFIAny*)calloc((size_t)vm->num_prof + 1, sizeof(TVMFFIAny));
  int rc = 0;
  int64_t made = 0;
  if (rows == NULL) return kvm_fail("MemoryError", "profile: out of memory");
  for (; made < vm->num_prof && rc == 0; ++made) {
    TVMFFIAny item[3];
    TVMFFIByteArray bytes = {vm->prof[made].name, strlen(vm->prof[made].name)};
    kvm_set_none(&item[0]);
    rc = TVMFFIStringFromByteArray(&bytes, &item[0]);
    kvm_set_int(&item[1], vm->prof[made].calls);
    kvm_set_int(&item[2], vm->prof[made].ns);
    if (rc == 0) rc = kvm_make_array(item, 3, &rows[made]);
    kiln_vm_any_release(&item[0]);
  }
  if (rc == 0) rc = kvm_make_array(rows, (int32_t)vm->num_prof, ret);
  for (int64_t i = 0; i < made; ++i) kiln_vm_any_release(&rows[i]);
  free(rows);
  return rc;
}

/* ---- the interpreter ---------------------------------------------------------------------- */

static int kvm_exec_call(KilnVM* vm, const KvmInstr* in, TVMFFIAny* regs) {
  TVMFFIAny small[KVM_SMALL];
  TVMFFIAny* argv = small;
  TVMFFIAny r;
  const KvmFunc* callee = &vm->funcs[in->b];
  int rc;
  if (in->nargs > KVM_SMALL) {
    argv = (TVMFFIAny*)malloc(sizeof(TVMFFIAny) * (size_t)in->nargs);
    if (argv == NULL) return kvm_fail("MemoryError", "VM call: out of memory");
  }
  for (int32_t i = 0; i < in->nargs; ++i) {
    const KvmArg* a = &in->args[i];
    switch (a->kind) {
      case KVM_A_REG: argv[i] = regs[a->value]; break;
      case KVM_A_IMM: kvm_set_int(&argv[i], a->value); break;
      case KVM_A_CONST: argv[i] = vm->c[a->value]; break;
      case KVM_A_FUNC: argv[i] = vm->f[a->value]; break;
      case KVM_A_CTX: kvm_set_ptr(&argv[i], vm); break;
      default: kvm_set_none(&argv[i]); break;
    }
  }
  if (vm->hdr.profiling &&
      (callee->kind == KVM_FUNC_PACKED || callee->kind == KVM_FUNC_KERNEL)) {
    int64_t t0 = kvm_now_ns();
    rc = kvm_call_function(vm->f[in->b].v_obj, argv, in->nargs, &r);
    kvm_record(vm, callee->name, argv, kvm_now_ns() - t0);
  } else {
    rc = kvm_call_function(vm->f[in->b].v_obj, argv, in->nargs, &r);
  }
  if (argv != small) free(argv);
  if (rc != 0) return rc;
  if (in->a == KVM_REG_VOID) {
    kiln_vm_any_release(&r);
  } else {
    TVMFFIAny old = regs[in->a];
    regs[in->a] = r;
    kiln_vm_any_release(&old);
  }
  return 0;
}

static int kvm_run(KilnVM* vm, const KvmFunc* fn, TVMFFIAny* regs, TVMFFIAny* ret) {
  int64_t pc = fn->start;
  for (;;) {
    const KvmInstr* in;
    if (pc >= fn->end) {
      return kvm_fail("RuntimeError", "%s: bytecode ran past its last instruction", fn->name);
    }
    in = &vm->code[pc];
    switch (in->op) {
      case KVM_OP_CALL:
        if (kvm_exec_call(vm, in, regs) != 0) return -1;
        pc += 1;
        break;
      case KVM_OP_RET:
        *ret = regs[in->a];
        kvm_set_none(&regs[in->a]);
        return 0;
      case KVM_OP_GOTO: pc += in->a; break;
      default: { /* KVM_OP_IF */
        const TVMFFIAny* c = &regs[in->a];
        if (c->type_index != kTVMFFIInt && c->type_index != kTVMFFIBool) {
          return kvm_fail("TypeError", "%s: If expects an int or bool condition, got %s",
                          fn->name, kvm_kind_name(c->type_index));
        }
        pc += c->v_int64 != 0 ? 1 : in->b;
        break;
      }
    }
  }
}

/* Call VM function `index` (bytecode or compiled) with argument views. */
static int kvm_invoke(KilnVM* vm, int64_t index, const TVMFFIAny* args, int32_t n,
                      TVMFFIAny* ret) {
  const KvmFunc* fn = &vm->funcs[index];
  TVMFFIAny small[KVM_SMALL];
  TVMFFIAny* regs = small;
  int rc = 0;
  if (n != fn->num_params) {
    return kvm_fail("TypeError", "%s() takes %d argument%s (%s), got %d", fn->name,
                    fn->num_params, fn->num_params == 1 ? "" : "s", fn->params, n);
  }
  if (fn->num_regs > KVM_SMALL) {
    regs = (TVMFFIAny*)calloc((size_t)fn->num_regs, sizeof(TVMFFIAny));
    if (regs == NULL) return kvm_fail("MemoryError", "%s: cannot allocate registers", fn->name);
  } else {
    memset(small, 0, sizeof(TVMFFIAny) * (size_t)fn->num_regs);
  }
  for (int32_t i = 0; i < n && rc == 0; ++i) rc = kvm_own(&args[i], &regs[i]);
  if (rc == 0 && fn->kind == KVM_FUNC_BYTECODE) {
    rc = kvm_run(vm, fn, regs, ret);
  } else if (rc == 0 && vm->entries[index] != NULL) {
    rc = vm->entries[index](vm, regs, vm->c, vm->f);
    if (rc == 0) {
      *ret = regs[n];
      kvm_set_none(&regs[n]);
    }
  } else if (rc == 0) {
    TVMFFIAny argv[4], r;
    kvm_set_ptr(&argv[0], vm);
    kvm_set_ptr(&argv[1], regs);
    kvm_set_ptr(&argv[2], vm->c);
    kvm_set_ptr(&argv[3], vm->f);
    rc = kvm_call_function(vm->impls[index].v_obj, argv, 4, &r);
    if (rc == 0) {
      kiln_vm_any_release(&r);
      *ret = regs[n];
      kvm_set_none(&regs[n]);
    }
  }
  for (int64_t i = 0; i < fn->num_regs; ++i) kiln_vm_any_release(&regs[i]);
  if (regs != small) free(regs);
  return rc;
}

static int kvm_vmfunc_call(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  KvmFuncSelf* s = (KvmFuncSelf*)self;
  if (s->vm == NULL) {
    return kvm_fail("RuntimeError", "%s: the VirtualMachine that made this function was freed",
                    s->name);
  }
  return kvm_invoke(s->vm, s->index, args, n, ret);
}

static void kvm_funcself_free(void* self) {
  KvmFuncSelf* s = (KvmFuncSelf*)self;
  free(s->name);
  free(s);
}

/* ---- decoding and validation -------------------------------------------------------------- */

static int kvm_bad(const KilnVM* vm, const KvmFunc* fn, int64_t pc, const char* what,
                   long long v) {
  (void)vm;
  return kvm_fail("ValueError", "invalid executable: function %s, instruction %lld: %s %lld",
                  fn->name, (long long)(pc - fn->start), what, v);
}

static int kvm_decode(KilnVM* vm, const int64_t* w, int64_t nw) {
  int64_t ni = 0, na = 0, pos = 0, ai = 0;
  static const int width[5] = {0, 4, 2, 2, 3};
  while (pos < nw) {
    int64_t op = w[pos];
    if (op < KVM_OP_CALL || op > KVM_OP_IF || pos + width[op] > nw) {
      return kvm_fail("ValueError", "invalid executable: bad instruction word %lld at %lld",
                      (long long)op, (long long)pos);
    }
    if (op == KVM_OP_CALL) {
      int64_t k = w[pos + 3];
      if (k < 0 || k > nw - pos - 4) {
        return kvm_fail("ValueError", "invalid executable: bad argument count at %lld",
                        (long long)pos);
      }
      na += k;
      pos += k;
    }
    pos += width[op];
    ni++;
  }
  vm->code = (KvmInstr*)calloc((size_t)ni + 1, sizeof(KvmInstr));
  vm->arg_pool = (KvmArg*)calloc((size_t)na + 1, sizeof(KvmArg));
  if (vm->code == NULL || vm->arg_pool == NULL) return kvm_fail("MemoryError", "out of memory");
  vm->num_instrs = ni;
  for (int64_t i = 0, p = 0; i < ni; ++i) {
    KvmInstr* in = &vm->code[i];
    in->op = (int32_t)w[p];
    in->a = w[p + 1];
    if (in->op == KVM_OP_CALL || in->op == KVM_OP_IF) in->b = w[p + 2];
    if (in->op == KVM_OP_CALL) {
      in->nargs = (int32_t)w[p + 3];
      in->args = &vm->arg_pool[ai];
      for (int32_t j = 0; j < in->nargs; ++j, ++ai) {
        uint64_t word = (uint64_t)w[p + 4 + j];
        int64_t value = (int64_t)(word << 8) >> 8;
        int32_t kind = (int32_t)(word >> 56);
        if (kind == KVM_ARG_REG && value == KVM_REG_VOID) kind = KVM_A_NONE;
        if (kind == KVM_ARG_REG && value == KVM_REG_CTX) kind = KVM_A_CTX;
        if (kind > KVM_ARG_FUNC && kind != KVM_A_NONE && kind != KVM_A_CTX) kind = -1;
        vm->arg_pool[ai].kind = kind;
        vm->arg_pool[ai].value = value;
      }
      p += in->nargs;
    }
    p += width[in->op];
  }
  return 0;
}

static int kvm_check_arg(const KilnVM* vm, const KvmFunc* fn, int64_t pc, const KvmArg* a) {
  switch (a->kind) {
    case KVM_A_REG:
      return a->value >= 0 && a->value < fn->num_regs ? 0 : kvm_bad(vm, fn, pc, "register",
                                                                    (long long)a->value);
    case KVM_A_CONST:
      return a->value >= 0 && a->value < vm->num_consts
                 ? 0 : kvm_bad(vm, fn, pc, "constant index", (long long)a->value);
    case KVM_A_FUNC:
      return a->value >= 0 && a->value < vm->num_funcs
                 ? 0 : kvm_bad(vm, fn, pc, "function index", (long long)a->value);
    case KVM_A_IMM: case KVM_A_CTX: case KVM_A_NONE: return 0;
    default: return kvm_bad(vm, fn, pc, "argument kind", (long long)a->kind);
  }
}

static int kvm_check_instr(const KilnVM* vm, const KvmFunc* fn, int64_t pc) {
  const KvmInstr* in = &vm->code[pc];
  int64_t regs = fn->num_regs;
  switch (in->op) {
    case KVM_OP_CALL:
      if (in->a != KVM_REG_VOID && (in->a < 0 || in->a >= regs)) {
        return kvm_bad(vm, fn, pc, "destination register", (long long)in->a);
      }
      if (in->b < 0 || in->b >= vm->num_funcs) {
        return kvm_bad(vm, fn, pc, "callee index", (long long)in->b);
      }
      for (int32_t j = 0; j < in->nargs; ++j) {
        if (kvm_check_arg(vm, fn, pc, &in->args[j]) != 0) return -1;
      }
      return 0;
    case KVM_OP_RET:
      return in->a >= 0 && in->a < regs ? 0 : kvm_bad(vm, fn, pc, "register", (long long)in->a);
    case KVM_OP_GOTO:
      return pc + in->a >= fn->start && pc + in->a <= fn->end
                 ? 0 : kvm_bad(vm, fn, pc, "jump offset", (long long)in->a);
    default:
      if (in->a < 0 || in->a >= regs) return kvm_bad(vm, fn, pc, "register", (long long)in->a);
      if (pc + in->b < fn->start || pc + in->b > fn->end) {
        return kvm_bad(vm, fn, pc, "jump offset", (long long)in->b);
      }
      return 0;
  }
}

/* Jumps may target the end of their function (dead code after a return); running off the end
 * is a run-time error. */
static int kvm_validate(const KilnVM* vm) {
  for (int64_t i = 0; i < vm->num_funcs; ++i) {
    const KvmFunc* fn = &vm->funcs[i];
    if (fn->kind < KVM_FUNC_BYTECODE || fn->kind > KVM_FUNC_KERNEL || fn->num_params < 0 ||
        fn->num_regs < 0 || fn->num_regs > (1 << 24)) {
      return kvm_fail("ValueError", "invalid executable: function %s has a bad kind or size",
                      fn->name);
    }
    if (fn->kind == KVM_FUNC_VMTIR && fn->num_regs < fn->num_params + 1) {
      return kvm_fail("ValueError",
                      "invalid executable: compiled function %s needs at least %d registers",
                      fn->name, fn->num_params + 1);
    }
    if (fn->kind != KVM_FUNC_BYTECODE) continue;
    if (fn->num_regs < fn->num_params || fn->start < 0 || fn->start >= fn->end ||
        fn->end > vm->num_instrs) {
      return kvm_fail("ValueError",
                      "invalid executable: function %s has bad instruction range [%lld, %lld) "
                      "or too few registers",
                      fn->name, (long long)fn->start, (long long)fn->end);
    }
    for (int64_t pc = fn->start; pc < fn->end; ++pc) {
      if (kvm_check_instr(vm, fn, pc) != 0) return -1;
    }
  }
  return 0;
}
