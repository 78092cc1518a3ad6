"""C text of kiln's CUDA driver-API loader and kernel launcher, shared by generated host code and
by the runtime's CUDA memory helpers (`kiln.runtime.cuda_runtime`).

The loader opens ``libcuda.so.1`` with ``dlopen`` on first use and looks up the few driver
functions kiln needs, so host libraries build without CUDA headers or libraries and load on
machines without a GPU. Until a CUDA function is called nothing happens; then, without a driver
or device, the call raises a Python ``RuntimeError`` (`NO_DRIVER_MESSAGE`) instead of crashing.

Launch path (no Python involved): `kiln_cuda_launch(module, kernel, device, grid, block, smem,
args)` makes the device's primary context current when it is not, loads the module's CUBIN on
that device the first time (under a mutex; later calls read a flag with acquire semantics), raises
the kernel's dynamic shared-memory limit when a launch asks for more than 48 KiB, and calls
``cuLaunchKernel`` on the current tvm-ffi stream of the device (``TVMFFIEnvGetStream``; NULL, the
legacy default stream, unless a caller such as PyTorch set one).
"""

from __future__ import annotations

NO_DRIVER_MESSAGE = (
    "kiln: CUDA driver not available (libcuda.so.1 not found) — this function needs an NVIDIA "
    "GPU and its driver"
)
"""The start of the error raised when a CUDA function is called on a machine without a driver."""

DRIVER_C = r"""
#include <dlfcn.h>
#include <pthread.h>
#include <tvm/ffi/extra/c_env_api.h>

/* The few CUDA driver types kiln needs, declared here so no CUDA header is required. */
typedef int kiln_CUresult;
typedef int kiln_CUdevice;
typedef void* kiln_CUcontext;
typedef void* kiln_CUmodule;
typedef void* kiln_CUfunction;
typedef unsigned long long kiln_CUdeviceptr;
#define KILN_CUDA_MAX_DEVICES 64
#define KILN_CUDA_SMEM_DEFAULT (48 * 1024)
#define KILN_CU_FUNC_ATTR_MAX_DYN_SMEM 8

typedef struct {
  kiln_CUresult (*Init)(unsigned int);
  kiln_CUresult (*DeviceGetCount)(int*);
  kiln_CUresult (*DeviceGet)(kiln_CUdevice*, int);
  kiln_CUresult (*DevicePrimaryCtxRetain)(kiln_CUcontext*, kiln_CUdevice);
  kiln_CUresult (*CtxGetCurrent)(kiln_CUcontext*);
  kiln_CUresult (*CtxSetCurrent)(kiln_CUcontext);
  kiln_CUresult (*CtxPushCurrent)(kiln_CUcontext);
  kiln_CUresult (*CtxPopCurrent)(kiln_CUcontext*);
  kiln_CUresult (*CtxSynchronize)(void);
  kiln_CUresult (*ModuleLoadData)(kiln_CUmodule*, const void*);
  kiln_CUresult (*ModuleGetFunction)(kiln_CUfunction*, kiln_CUmodule, const char*);
  kiln_CUresult (*FuncSetAttribute)(kiln_CUfunction, int, int);
  kiln_CUresult (*LaunchKernel)(kiln_CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                unsigned, unsigned, void*, void**, void**);
  kiln_CUresult (*MemAlloc)(kiln_CUdeviceptr*, size_t);
  kiln_CUresult (*MemFree)(kiln_CUdeviceptr);
  kiln_CUresult (*MemcpyHtoD)(kiln_CUdeviceptr, const void*, size_t);
  kiln_CUresult (*MemcpyDtoH)(void*, kiln_CUdeviceptr, size_t);
  kiln_CUresult (*MemcpyDtoD)(kiln_CUdeviceptr, kiln_CUdeviceptr, size_t);
  kiln_CUresult (*GetErrorName)(kiln_CUresult, const char**);
  kiln_CUresult (*GetErrorString)(kiln_CUresult, const char**);
} kiln_cuda_api;

static kiln_cuda_api kiln_cu;
typedef char kiln_cuda_api_is_a_table[sizeof(kiln_cuda_api) == 20 * sizeof(void*) ? 1 : -1];
static int kiln_cuda_state = 0; /* 0: not tried yet, 1: ready, -1: unavailable */
static int kiln_cuda_count = 0;
static char kiln_cuda_why[768];
static pthread_mutex_t kiln_cuda_mutex = PTHREAD_MUTEX_INITIALIZER;
static kiln_CUcontext kiln_cuda_ctx[KILN_CUDA_MAX_DEVICES];
static _Thread_local int kiln_cuda_device_id = 0;

static const char* kiln_cuda_symbols[] = {
  "cuInit", "cuDeviceGetCount", "cuDeviceGet", "cuDevicePrimaryCtxRetain", "cuCtxGetCurrent",
  "cuCtxSetCurrent", "cuCtxPushCurrent_v2", "cuCtxPopCurrent_v2", "cuCtxSynchronize",
  "cuModuleLoadData", "cuModuleGetFunction", "cuFuncSetAttribute", "cuLaunchKernel",
  "cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemcpyDtoD_v2",
  "cuGetErrorName", "cuGetErrorString"};

static void kiln_cuda_describe(kiln_CUresult r, char* out, size_t cap) {
  const char* name = NULL;
  const char* text = NULL;
  if (kiln_cu.GetErrorName != NULL) kiln_cu.GetErrorName(r, &name);
  if (kiln_cu.GetErrorString != NULL) kiln_cu.GetErrorString(r, &text);
  snprintf(out, cap, "%s (%s)", name ? name : "CUDA error", text ? text : "unknown");
}

/* Open the driver and initialize it; on failure leave the reason in kiln_cuda_why. */
static int kiln_cuda_open(void) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  char what[256];
  if (lib == NULL) {
    const char* err = dlerror();
    snprintf(kiln_cuda_why, sizeof(kiln_cuda_why),
             "kiln: CUDA driver not available (libcuda.so.1 not found) — this function needs an "
             "NVIDIA GPU and its driver [%s]", err ? err : "dlopen failed");
    return -1;
  }
  /* NOTE: the table is filled with memcpy (alias-safe); its fields follow kiln_cuda_symbols. */
  for (size_t i = 0; i < sizeof(kiln_cuda_symbols) / sizeof(kiln_cuda_symbols[0]); ++i) {
    void* sym = dlsym(lib, kiln_cuda_symbols[i]);
    memcpy((char*)&kiln_cu + i * sizeof(void*), &sym, sizeof(sym));
    if (sym == NULL) {
      snprintf(kiln_cuda_why, sizeof(kiln_cuda_why),
               "kiln: the CUDA driver in libcuda.so.1 lacks %s; update the NVIDIA driver",
               kiln_cuda_symbols[i]);
      return -1;
    }
  }
  kiln_CUresult r = kiln_cu.Init(0);
  if (r == 0) r = kiln_cu.DeviceGetCount(&kiln_cuda_count);
  if (r != 0 || kiln_cuda_count == 0) {
    if (r != 0) kiln_cuda_describe(r, what, sizeof(what));
    else snprintf(what, sizeof(what), "no CUDA device found");
    snprintf(kiln_cuda_why, sizeof(kiln_cuda_why),
             "kiln: CUDA driver found but unusable: %s — this function needs an NVIDIA GPU",
             what);
    return -1;
  }
  return 0;
}

/* 0 when the driver is ready; else -1 with a RuntimeError raised (the reason is cached). */
static int kiln_cuda_init(void) {
  int state = __atomic_load_n(&kiln_cuda_state, __ATOMIC_ACQUIRE);
  if (state == 0) {
    pthread_mutex_lock(&kiln_cuda_mutex);
    state = kiln_cuda_state;
    if (state == 0) {
      state = kiln_cuda_open() == 0 ? 1 : -1;
      __atomic_store_n(&kiln_cuda_state, state, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&kiln_cuda_mutex);
  }
  if (state == 1) return 0;
  TVMFFIErrorSetRaisedFromCStr("RuntimeError", kiln_cuda_why);
  return -1;
}

static int kiln_cuda_error(kiln_CUresult r, const char* what, const char* name) {
  char desc[256], msg[512];
  kiln_cuda_describe(r, desc, sizeof(desc));
  snprintf(msg, sizeof(msg), "kiln: %s%s failed: %s", what, name, desc);
  TVMFFIErrorSetRaisedFromCStr("RuntimeError", msg);
  return -1;
}

/* The primary context of `dev`, retained once; NULL with an error raised on failure. */
static kiln_CUcontext kiln_cuda_context(int dev) {
  if (kiln_cuda_init() != 0) return NULL;
  if (dev < 0 || dev >= kiln_cuda_count || dev >= KILN_CUDA_MAX_DEVICES) {
    char msg[160];
    snprintf(msg, sizeof(msg), "kiln: CUDA device %d does not exist (%d device(s) found)", dev,
             kiln_cuda_count);
    TVMFFIErrorSetRaisedFromCStr("ValueError", msg);
    return NULL;
  }
  kiln_CUcontext ctx = __atomic_load_n(&kiln_cuda_ctx[dev], __ATOMIC_ACQUIRE);
  if (ctx != NULL) return ctx;
  kiln_CUresult r = 0;
  pthread_mutex_lock(&kiln_cuda_mutex);
  ctx = kiln_cuda_ctx[dev];
  if (ctx == NULL) {
    kiln_CUdevice d = 0;
    r = kiln_cu.DeviceGet(&d, dev);
    if (r == 0) r = kiln_cu.DevicePrimaryCtxRetain(&ctx, d);
    if (r == 0) __atomic_store_n(&kiln_cuda_ctx[dev], ctx, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&kiln_cuda_mutex);
  if (r != 0) {
    kiln_cuda_error(r, "retaining the primary context of the device", "");
    return NULL;
  }
  return ctx;
}

/* Make the primary context of `dev` current on this thread (if it is not already). */
static int kiln_cuda_use_device(int dev) {
  kiln_CUcontext want = kiln_cuda_context(dev);
  kiln_CUcontext have = NULL;
  if (want == NULL) return -1;
  if (kiln_cu.CtxGetCurrent(&have) == 0 && have == want) return 0;
  kiln_CUresult r = kiln_cu.CtxSetCurrent(want);
  return r == 0 ? 0 : kiln_cuda_error(r, "cuCtxSetCurrent", "");
}
"""

LAUNCH_C = r"""
/* A CUBIN embedded in a host library, with its kernels' handles per device. */
typedef struct {
  const unsigned char* image;
  const char* const* names;
  int count;
  kiln_CUfunction* funcs; /* [KILN_CUDA_MAX_DEVICES * count] */
  int* smem;              /* [KILN_CUDA_MAX_DEVICES * count]: dynamic shared memory allowed */
  int loaded[KILN_CUDA_MAX_DEVICES];
} kiln_cuda_module;

static int kiln_cuda_load(kiln_cuda_module* m, int dev) {
  kiln_CUresult r = 0;
  const char* failed = "";
  pthread_mutex_lock(&kiln_cuda_mutex);
  if (!m->loaded[dev]) {
    kiln_CUmodule mod = NULL;
    r = kiln_cu.ModuleLoadData(&mod, m->image);
    for (int k = 0; r == 0 && k < m->count; ++k) {
      r = kiln_cu.ModuleGetFunction(&m->funcs[dev * m->count + k], mod, m->names[k]);
      failed = m->names[k];
    }
    if (r == 0) __atomic_store_n(&m->loaded[dev], 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&kiln_cuda_mutex);
  if (r == 0) return 0;
  return kiln_cuda_error(r, *failed ? "looking up kernel " : "loading the CUBIN (built for "
                         "another GPU architecture? set the target's -arch)", failed);
}

static int kiln_cuda_launch(kiln_cuda_module* m, int k, int64_t gx, int64_t gy, int64_t gz,
                            int64_t bx, int64_t by, int64_t bz, int64_t smem, void** args) {
  int dev = kiln_cuda_device_id;
  const char* name = m->names[k];
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0) return 0; /* no work */
  if (gx < 0 || gy < 0 || gz < 0 || bx < 0 || by < 0 || bz < 0 || smem < 0 ||
      gx > 0x7fffffffLL || gy > 65535 || gz > 65535 || bx * by * bz > 1024) {
    char msg[256];
    snprintf(msg, sizeof(msg), "kiln: kernel %s: invalid launch grid (%lld, %lld, %lld), block "
             "(%lld, %lld, %lld), %lld bytes of dynamic shared memory", name, (long long)gx,
             (long long)gy, (long long)gz, (long long)bx, (long long)by, (long long)bz,
             (long long)smem);
    TVMFFIErrorSetRaisedFromCStr("ValueError", msg);
    return -1;
  }
  if (kiln_cuda_use_device(dev) != 0) return -1;
  if (!__atomic_load_n(&m->loaded[dev], __ATOMIC_ACQUIRE) && kiln_cuda_load(m, dev) != 0) {
    return -1;
  }
  kiln_CUfunction f = m->funcs[dev * m->count + k];
  int* allowed = &m->smem[dev * m->count + k];
  if (smem > KILN_CUDA_SMEM_DEFAULT && smem > __atomic_load_n(allowed, __ATOMIC_ACQUIRE)) {
    kiln_CUresult r = kiln_cu.FuncSetAttribute(f, KILN_CU_FUNC_ATTR_MAX_DYN_SMEM, (int)smem);
    if (r != 0) return kiln_cuda_error(r, "allowing the dynamic shared memory of kernel ", name);
    __atomic_store_n(allowed, (int)smem, __ATOMIC_RELEASE);
  }
  void* stream = TVMFFIEnvGetStream(2, dev);
  kiln_CUresult r = kiln_cu.LaunchKernel(f, (unsigned)gx, (unsigned)gy, (unsigned)gz,
                                         (unsigned)bx, (unsigned)by, (unsigned)bz,
                                         (unsigned)smem, stream, args, NULL);
  return r == 0 ? 0 : kiln_cuda_error(r, "launching kernel ", name);
}
"""

SCRATCH_C = r"""
/* Device scratch of a host function that launches kernels (an intermediate that kernels pass
   to each other): on the arguments' device; NULL with a RuntimeError raised on failure. */
static void* kiln_cuda_alloc(int64_t nbytes, const char* func, const char* name) {
  kiln_CUdeviceptr p = 0;
  if (kiln_cuda_use_device(kiln_cuda_device_id) != 0) return NULL;
  kiln_CUresult r = kiln_cu.MemAlloc(&p, (size_t)(nbytes > 0 ? nbytes : 1));
  if (r == 0) return (void*)(uintptr_t)p;
  char what[256];
  snprintf(what, sizeof(what), "%s: allocating %lld bytes of device memory for ", func,
           (long long)nbytes);
  kiln_cuda_error(r, what, name);
  return NULL;
}

/* cuMemFree waits for the kernels still using the memory. */
static void kiln_cuda_free(void* p) { kiln_cu.MemFree((kiln_CUdeviceptr)(uintptr_t)p); }
"""
