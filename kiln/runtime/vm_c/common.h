/* kiln VM runtime, part 1 of 5: the VM context and helpers shared by builtins and interpreter.
 *
 * kiln/runtime/vm_runtime.py compiles anylist.h, common.h, builtins.c, checks.c, interp.c and vm.c
 * as one C file (in that order) with kiln's cached toolchain; the one exported symbol is the init
 * function at the end of vm.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KVM_MAX_DIMS 64
#define KVM_SMALL 16 /* arguments / registers kept on the C stack before falling back to malloc */
#define KVM_ALIGN 64

/* Serialized opcodes, argument kinds and function kinds (kiln/runtime/vm_format.py). */
enum { KVM_OP_CALL = 1, KVM_OP_RET = 2, KVM_OP_GOTO = 3, KVM_OP_IF = 4 };
enum { KVM_ARG_REG = 0, KVM_ARG_IMM = 1, KVM_ARG_CONST = 2, KVM_ARG_FUNC = 3 };
enum { KVM_FUNC_BYTECODE = 0, KVM_FUNC_VMTIR = 1, KVM_FUNC_PACKED = 2, KVM_FUNC_KERNEL = 3 };
#define KVM_REG_VOID (-1)
#define KVM_REG_CTX (-2)
/* Decoded argument kinds: the two special registers get kinds of their own. */
enum { KVM_A_REG, KVM_A_IMM, KVM_A_CONST, KVM_A_FUNC, KVM_A_CTX, KVM_A_NONE };

typedef struct {
  int32_t kind;
  int32_t pad;
  int64_t value;
} KvmArg;

typedef struct {
  int32_t op;
  int32_t nargs;
  int64_t a; /* CALL: dst; RET: reg; GOTO: offset; IF: cond reg */
  int64_t b; /* CALL: function index; IF: false offset */
  KvmArg* args;
} KvmInstr;

typedef struct {
  int32_t kind;
  int32_t num_params;
  int64_t num_regs;
  int64_t start, end; /* instruction range of a bytecode function */
  char* name;
  char* params; /* "x, y": for error messages */
} KvmFunc;

struct KilnVM;

/* The unchecked C function of a compiled VM function: (ctx_ptr, r, c, f) -> 0 or -1. */
typedef int32_t (*KvmEntry)(void* ctx_ptr, void* r, void* c, void* f);

/* `self` of the tvm-ffi Function standing for VM function `index` (detached when the VM dies). */
typedef struct {
  struct KilnVM* vm;
  int64_t index;
  char* name;
} KvmFuncSelf;

typedef struct {
  char* name;
  int64_t calls;
  int64_t ns;
} KvmProf;

/* One remembered result of `vm.builtin.call_memoized`: the function called, its dims, the value. */
#define KVM_MEMO_SLOTS 16
#define KVM_MEMO_DIMS 8
typedef struct {
  TVMFFIObject* func; /* NULL: an empty slot */
  int64_t ndim;
  int64_t dims[KVM_MEMO_DIMS];
  TVMFFIAny value;
} KvmMemo;

typedef struct KilnVM {
  KilnVMContextHeader hdr;
  DLDevice device;
  int64_t num_funcs;
  KvmFunc* funcs;
  KvmFuncSelf** selves; /* per function: the closure self of VM functions, else NULL */
  TVMFFIAny* f;         /* function any-list */
  TVMFFIAny* impls;     /* per function: the library's __vmtir__ function (compiled mode) */
  KvmEntry* entries;    /* per function: its unchecked C function, or NULL (compiled mode) */
  int64_t num_consts;
  TVMFFIAny* c; /* constant any-list (at least one slot) */
  int64_t num_instrs;
  KvmInstr* code;
  KvmArg* arg_pool;
  KvmProf* prof;
  int64_t num_prof, cap_prof;
  KvmMemo memo[KVM_MEMO_SLOTS];
  int64_t memo_next; /* the slot a new result replaces (round robin) */
} KilnVM;

__attribute__((format(printf, 2, 3))) static int kvm_fail(const char* kind, const char* fmt,
                                                          ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  TVMFFIErrorSetRaisedFromCStr(kind, buf);
  return -1;
}

static const char* kvm_kind_name(int32_t t) {
  switch (t) {
    case kTVMFFINone: return "None";
    case kTVMFFIInt: return "int";
    case kTVMFFIBool: return "bool";
    case kTVMFFIFloat: return "float";
    case kTVMFFIOpaquePtr: return "pointer";
    case kTVMFFIDataType: return "dtype";
    case kTVMFFIDevice: return "device";
    case kTVMFFIDLTensorPtr: return "DLTensor*";
    case kTVMFFIRawStr: case kTVMFFISmallStr: case kTVMFFIStr: return "str";
    case kTVMFFIByteArrayPtr: case kTVMFFISmallBytes: case kTVMFFIBytes: return "bytes";
    case kTVMFFIFunction: return "function";
    case kTVMFFIShape: return "shape";
    case kTVMFFITensor: return "tensor";
    case kTVMFFIArray: return "tuple";
    case kTVMFFIMap: return "map";
    case kTVMFFIModule: return "module";
    default: return t >= kTVMFFIStaticObjectBegin ? "object" : "value";
  }
}

static int64_t kvm_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline void kvm_set_none(TVMFFIAny* r) {
  r->type_index = kTVMFFINone;
  r->zero_padding = 0;
  r->v_int64 = 0;
}

static inline void kvm_set_int(TVMFFIAny* r, int64_t v) {
  r->type_index = kTVMFFIInt;
  r->zero_padding = 0;
  r->v_int64 = v;
}

static inline void kvm_set_ptr(TVMFFIAny* r, void* p) {
  r->type_index = p == NULL ? kTVMFFINone : kTVMFFIOpaquePtr;
  r->zero_padding = 0;
  r->v_ptr = p;
}

/* Store an object we own a reference to. */
static inline void kvm_set_obj(TVMFFIAny* r, TVMFFIObjectHandle obj) {
  r->type_index = ((TVMFFIObject*)obj)->type_index;
  r->zero_padding = 0;
  r->v_obj = (TVMFFIObject*)obj;
}

/* An owned copy of an argument view. */
static int kvm_own(const TVMFFIAny* in, TVMFFIAny* out) {
  int32_t t = in->type_index;
  if (t >= kTVMFFIStaticObjectBegin) {
    *out = *in;
    if (in->v_obj != NULL) TVMFFIObjectIncRef(in->v_obj);
    return 0;
  }
  if (t == kTVMFFIRawStr || t == kTVMFFIDLTensorPtr || t == kTVMFFIByteArrayPtr ||
      t == kTVMFFIObjectRValueRef) {
    kvm_set_none(out);
    return TVMFFIAnyViewToOwnedAny(in, out);
  }
  *out = *in;
  return 0;
}

static inline DLTensor* kvm_dltensor(const TVMFFIAny* a) {
  if (a->type_index == kTVMFFITensor) {
    return (DLTensor*)((char*)a->v_obj + sizeof(TVMFFIObject));
  }
  if (a->type_index == kTVMFFIDLTensorPtr) return (DLTensor*)a->v_ptr;
  return NULL;
}

static inline TVMFFIShapeCell* kvm_shape_cell(const TVMFFIAny* a) {
  if (a->type_index != kTVMFFIShape) return NULL;
  return (TVMFFIShapeCell*)((char*)a->v_obj + sizeof(TVMFFIObject));
}

static inline TVMFFISeqCell* kvm_seq_cell(const TVMFFIAny* a) {
  if (a->type_index != kTVMFFIArray && a->type_index != kTVMFFIList) return NULL;
  return (TVMFFISeqCell*)((char*)a->v_obj + sizeof(TVMFFIObject));
}

/* The text of a string argument (raw, small or object); 0 when `a` is not a string. */
static int kvm_str(const TVMFFIAny* a, const char** data, int* len) {
  if (a->type_index == kTVMFFIRawStr) {
    *data = a->v_c_str;
    *len = (int)strlen(a->v_c_str);
  } else if (a->type_index == kTVMFFISmallStr) {
    *data = a->v_bytes;
    *len = (int)a->small_str_len;
  } else if (a->type_index == kTVMFFIStr) {
    TVMFFIByteArray* b = (TVMFFIByteArray*)((char*)a->v_obj + sizeof(TVMFFIObject));
    *data = b->data;
    *len = (int)b->size;
  } else {
    return 0;
  }
  return 1;
}

/* An owned, NUL-terminated copy of a string argument, or NULL. */
static char* kvm_strdup_arg(const TVMFFIAny* a) {
  const char* s;
  int n;
  char* out;
  if (!kvm_str(a, &s, &n)) return NULL;
  out = (char*)malloc((size_t)n + 1);
  if (out == NULL) return NULL;
  memcpy(out, s, (size_t)n);
  out[n] = '\0';
  return out;
}

static int kvm_nargs(const char* fn, int32_t n, int32_t lo, int32_t hi) {
  if (n >= lo && (hi < 0 || n <= hi)) return 0;
  if (hi == lo) return kvm_fail("TypeError", "%s expects %d arguments, got %d", fn, lo, n);
  if (hi < 0) return kvm_fail("TypeError", "%s expects at least %d arguments, got %d", fn, lo, n);
  return kvm_fail("TypeError", "%s expects %d to %d arguments, got %d", fn, lo, hi, n);
}

static int kvm_int_arg(const TVMFFIAny* args, int i, const char* fn, const char* what,
                       int64_t* out) {
  if (args[i].type_index != kTVMFFIInt && args[i].type_index != kTVMFFIBool) {
    return kvm_fail("TypeError", "%s: argument %d (%s) expected an int, got %s", fn, i, what,
                    kvm_kind_name(args[i].type_index));
  }
  *out = args[i].v_int64;
  return 0;
}

static int kvm_shape_arg(const TVMFFIAny* args, int i, const char* fn, const char* what,
                         const int64_t** dims, int64_t* ndim) {
  TVMFFIShapeCell* cell = kvm_shape_cell(&args[i]);
  if (cell == NULL) {
    return kvm_fail("TypeError", "%s: argument %d (%s) expected a shape, got %s", fn, i, what,
                    kvm_kind_name(args[i].type_index));
  }
  *dims = cell->data;
  *ndim = (int64_t)cell->size;
  return 0;
}

static int kvm_tensor_arg(const TVMFFIAny* args, int i, const char* fn, const char* what,
                          DLTensor** out) {
  *out = kvm_dltensor(&args[i]);
  if (*out == NULL) {
    return kvm_fail("TypeError", "%s: argument %d (%s) expected a tensor, got %s", fn, i, what,
                    kvm_kind_name(args[i].type_index));
  }
  return 0;
}

static int kvm_dtype_arg(const TVMFFIAny* args, int i, const char* fn, const char* what,
                         DLDataType* out) {
  if (args[i].type_index != kTVMFFIDataType) {
    return kvm_fail("TypeError", "%s: argument %d (%s) expected a dtype, got %s", fn, i, what,
                    kvm_kind_name(args[i].type_index));
  }
  *out = args[i].v_dtype;
  return 0;
}

static inline int64_t kvm_itemsize(DLDataType d) {
  return ((int64_t)d.bits * (int64_t)d.lanes + 7) / 8;
}

static int64_t kvm_prod(const int64_t* dims, int64_t n) {
  int64_t p = 1;
  for (int64_t i = 0; i < n; ++i) p *= dims[i];
  return p;
}

static void kvm_dtype_str(DLDataType d, char* buf, size_t size) {
  TVMFFIAny s;
  const char* text;
  int len;
  kvm_set_none(&s);
  if (TVMFFIDataTypeToString(&d, &s) == 0 && kvm_str(&s, &text, &len)) {
    snprintf(buf, size, "%.*s", len, text);
  } else {
    snprintf(buf, size, "dtype(%d, %d, %d)", d.code, d.bits, d.lanes);
  }
  kiln_vm_any_release(&s);
}

static void kvm_dims_str(const int64_t* dims, int64_t n, char* buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "(");
  for (int64_t i = 0; i < n && used < size; ++i) {
    used += (size_t)snprintf(buf + used, size - used, i == 0 ? "%lld" : ", %lld",
                             (long long)dims[i]);
  }
  if (used < size) snprintf(buf + used, size - used, n == 1 ? ",)" : ")");
}

/* Call a global function looked up once through *cache. */
static int kvm_call_global(void* volatile* cache, const char* name, TVMFFIAny* args, int32_t n,
                           TVMFFIAny* ret) {
  void* f;
  if (kiln_vm_lookup_global(cache, name, &f) != 0) return -1;
  kvm_set_none(ret);
  return TVMFFIFunctionCall(f, args, n, ret);
}

static int kvm_make_shape(const int64_t* dims, int64_t n, TVMFFIAny* ret) {
  static void* volatile cache = NULL;
  TVMFFIAny argv[KVM_MAX_DIMS];
  if (n > KVM_MAX_DIMS) return kvm_fail("ValueError", "shapes have at most %d dims", KVM_MAX_DIMS);
  for (int64_t i = 0; i < n; ++i) kvm_set_int(&argv[i], dims[i]);
  return kvm_call_global(&cache, "ffi.Shape", argv, (int32_t)n, ret);
}

static int kvm_make_array(const TVMFFIAny* items, int32_t n, TVMFFIAny* ret) {
  static void* volatile cache = NULL;
  return kvm_call_global(&cache, "ffi.Array", (TVMFFIAny*)items, n, ret);
}

static inline int kvm_call_function(TVMFFIObject* f, const TVMFFIAny* args, int32_t n,
                                    TVMFFIAny* ret) {
  TVMFFIFunctionCell* cell = (TVMFFIFunctionCell*)((char*)f + sizeof(TVMFFIObject));
  kvm_set_none(ret);
  return cell->safe_call(f, args, n, ret);
}
