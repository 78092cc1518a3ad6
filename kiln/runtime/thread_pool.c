/* kiln's thread pool: one per process, shared by every kernel library (kiln/runtime/thread_pool.py).

   Every function here is static: the pool is reached only through the table that the exported
   tvm-ffi function __kiln_thread_pool returns (KilnPoolApi), so several libraries that each
   link a copy (an exported model carries one, see kiln/runtime/vm_export.py) never bind to each
   other's symbols; the process picks one copy and uses only that one (kiln/runtime/vm_runtime.py).

   kiln_pool_run(n, grain, fn, ctx) runs fn(ctx, begin, end) over [0, n) in chunks. Each thread
   has a share of [0, n) (the caller the first, worker k the k+1-th) and claims chunks of it from
   an atomic counter, then chunks left in the others' shares; a worker that is awake joins while
   the job is open. When no chunk is left the caller closes the job and waits only
   for the workers that joined (each finishing the chunk it holds), never for a worker that has
   not started: on a busy machine a descheduled worker costs nothing, the caller does the work.
   A worker spins (pause) for `spin_ns` after its last job, so the consecutive kernels of one
   model call find it awake, then sleeps on a futex; a job wakes sleeping workers.
   NOTE: on a busy machine a spinning worker takes CPU time from its own process (the kernel
   shares the CPU between processes, or sessions, not threads), which measured slower than not
   spinning at all. A worker that was preempted (an involuntary context switch, from
   getrusage) BUSY_PREEMPTIONS times within BUSY_WINDOW_NS knows other threads want its CPU: it
   stops spinning and sleeps after each job for the next BACKOFF_NS. NOTE: one preemption is not
   enough. On the quiet 2-core VM a spinning thread is preempted 2-4 times a second by kernel
   threads (sometimes twice within 4 ms); on a busy one, every few milliseconds. Backing off on
   every preemption (or on two within 50 ms) kept the worker asleep on the quiet machine, so each
   job paid a futex wake and the worker joined late (bench_ops, quiet, 1 -> 2 threads: softmax
   128x1024 35.7 -> 39.8 us, layer_norm 128x768 17.7 -> 21.5 us; never backing off: 38.8 ->
   19.7 and 17.9 -> 11.1 us). Four within 50 ms still backed off 1-3 times in each of six
   quiet runs of 20000 layer_norm calls (about 0.3 s each), and half the calls then paid a
   wake (median 11.0-15.9 us on 2 threads, 16.9 on 1); eight never did (8.7-11.4 us). Under
   two busy loops the encoder on 2 threads measured the same with four or eight (3.1-3.2 ms
   median, one run of eight 2.1). A preemption while the worker runs on the CPU its last caller
   started on is not counted: its own caller took the CPU (the scheduler then moves one of
   them), not other work; counting those kept a worker that started beside its caller asleep
   for whole runs (small CNN, 2 threads, runs of 3000 calls interleaved: 198-330 us counting
   them, 193-210 not; under two busy loops, the encoder: 4.0-4.9 ms counting, 3.7-3.9 not).
   A job started while another runs (a parallel loop inside a parallel loop, or a second calling
   thread) runs on its caller alone.
   A calling thread may cap the threads its own jobs use (the caller included) with
   __kiln_pool_call_threads(n) (a thread-local; 0: all): a model with num_threads sets it around
   each call (kiln/driver/model.py). Workers whose share index is not below the cap stay out of
   such a job. NOTE: a tvm-ffi function beside the KilnPoolApi table, not a field of it, so
   models exported before it keep loading (an old copy has no cap: kiln/runtime/thread_pool.py). */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <tvm/ffi/c_api.h>
#include <unistd.h>

typedef void (*kiln_range_fn)(void* ctx, int64_t begin, int64_t end);

#define KILN_POOL_MAX 64
#define OPEN (1u << 30)
#define BACKOFF_NS 200000000   /* 0.2 s */
#define BUSY_WINDOW_NS 50000000 /* BUSY_PREEMPTIONS preemptions within this: a busy machine */
#define BUSY_PREEMPTIONS 8

/* One thread's share of a job: [next, end), claimed a chunk at a time by its owner and, once
   their own share is done, by the others. */
typedef struct {
  int64_t next __attribute__((aligned(64)));
  int64_t end;
} home_range;

static struct {
  int configured;    /* threads besides the caller, as asked */
  int workers;       /* threads besides the caller, started */
  int64_t spin_ns;   /* how long an idle worker spins before it sleeps */
  int started;
  pthread_mutex_t start_lock;
  int busy;          /* a job is running (try-lock) */
  /* the job */
  kiln_range_fn fn;
  void* ctx;
  int64_t chunk;
  int parts;                                 /* threads the job is split between */
  home_range home[KILN_POOL_MAX];            /* thread k's share of the job */
  unsigned state __attribute__((aligned(64))); /* OPEN | number of workers inside */
  int gen __attribute__((aligned(64)));        /* bumped for every job (futex word) */
  int sleepers;
  int64_t backoff_until; /* no spinning before this time (now_ns) */
  int caller_cpu;        /* where the last job's caller ran (sched_getcpu) */
} P = {.start_lock = PTHREAD_MUTEX_INITIALIZER, .caller_cpu = -1};

static __thread int call_threads; /* this thread's cap on a job's threads; 0: none */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Thread `self` runs the chunks of its own share, then those left in the others'. */
static void run_chunks(int self) {
  kiln_range_fn fn = P.fn;
  void* ctx = P.ctx;
  int64_t chunk = P.chunk;
  int parts = P.parts;
  for (int i = 0; i < parts; ++i) {
    home_range* r = &P.home[(self + i) % parts];
    for (;;) {
      int64_t b = __atomic_fetch_add(&r->next, chunk, __ATOMIC_RELAXED);
      if (b >= r->end) break;
      fn(ctx, b, b + chunk < r->end ? b + chunk : r->end);
    }
  }
}

/* Join the open job (if any) and help with it. */
static void help(int self) {
  unsigned s = __atomic_load_n(&P.state, __ATOMIC_ACQUIRE);
  while (s & OPEN) {
    if (__atomic_compare_exchange_n(&P.state, &s, s + 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      /* inside, the job cannot close: P.parts is this job's (a capped job leaves us out) */
      if (self < P.parts) run_chunks(self);
      __atomic_fetch_sub(&P.state, 1, __ATOMIC_RELEASE);
      return;
    }
  }
}

static long preemptions(void) {
  struct rusage u;
  return getrusage(RUSAGE_THREAD, &u) == 0 ? u.ru_nivcsw : 0;
}

static void sleep_until_job(int seen) {
  __atomic_fetch_add(&P.sleepers, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&P.gen, __ATOMIC_SEQ_CST) == seen) {
    syscall(SYS_futex, &P.gen, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
  }
  __atomic_fetch_sub(&P.sleepers, 1, __ATOMIC_SEQ_CST);
}

/* Wait for a job after `seen`: spin while the machine lets us, then sleep; returns its gen. */
/* Preemptions of one worker counted over a window of BUSY_WINDOW_NS. */
typedef struct {
  int64_t window_start;
  long count;
} busy_window;

static int wait_for_job(int seen, long* preempted, busy_window* w) {
  for (;;) {
    int64_t start = now_ns();
    long now_preempted = preemptions();
    /* NOTE: a worker on its caller's CPU was preempted by its own caller, not by other work:
       not a busy machine (the scheduler moves one of them to a free CPU) */
    int beside_caller = sched_getcpu() == __atomic_load_n(&P.caller_cpu, __ATOMIC_RELAXED);
    if (now_preempted != *preempted && beside_caller) {
      *preempted = now_preempted;
    } else if (now_preempted != *preempted) {
      if (start - w->window_start > BUSY_WINDOW_NS) {
        w->window_start = start;
        w->count = 0;
      }
      w->count += now_preempted - *preempted;
      *preempted = now_preempted;
      if (w->count >= BUSY_PREEMPTIONS) {
        __atomic_store_n(&P.backoff_until, start + BACKOFF_NS, __ATOMIC_RELAXED);
      }
    }
    int spin = start >= __atomic_load_n(&P.backoff_until, __ATOMIC_RELAXED);
    int64_t until = start + (spin ? P.spin_ns : 0);
    for (unsigned i = 0;; ++i) {
      int g = __atomic_load_n(&P.gen, __ATOMIC_ACQUIRE);
      if (g != seen) return g;
      if (!spin) break;
      cpu_relax();
      if ((i & 63) == 63 && now_ns() > until) break;
      if ((i & 1023) == 1023 && preemptions() != *preempted) break; /* checked on the next turn */
    }
    sleep_until_job(seen);
  }
}

static void* worker(void* arg) {
  int self = (int)(intptr_t)arg; /* its share of every job: 1.. (the caller's is 0) */
  int seen = __atomic_load_n(&P.gen, __ATOMIC_ACQUIRE);
  long preempted = preemptions();
  busy_window busy = {0, 0};
  for (;;) {
    seen = wait_for_job(seen, &preempted, &busy);
    help(self);
  }
  return NULL;
}

static int start_workers(void) {
  pthread_mutex_lock(&P.start_lock);
  if (!P.started) {
    int ok = 0;
    for (int i = 0; i < P.workers; ++i) {
      pthread_t t;
      if (pthread_create(&t, NULL, worker, (void*)(intptr_t)(i + 1)) != 0) break;
      pthread_detach(t);
      ++ok;
    }
    P.workers = ok;
    __atomic_store_n(&P.started, 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&P.start_lock);
  return P.workers;
}

/* A forked child has none of the parent's workers: it starts its own on its first job. */
static void after_fork_in_child(void) {
  pthread_mutex_init(&P.start_lock, NULL);
  P.started = 0;
  P.busy = 0;
  P.state = 0;
  P.sleepers = 0;
  P.backoff_until = 0;
  P.workers = P.configured;
}

/* Threads (the caller included) and idle spin time; call once, before the first job. */
static void kiln_pool_init(int threads, int64_t spin_ns) {
  if (threads < 1) threads = 1;
  if (threads > KILN_POOL_MAX) threads = KILN_POOL_MAX;
  P.configured = P.workers = threads - 1;
  P.spin_ns = spin_ns < 0 ? 0 : spin_ns;
  pthread_atfork(NULL, NULL, after_fork_in_child);
}

static int kiln_pool_threads(void) { return P.workers + 1; }

static void kiln_pool_run(int64_t n, int64_t grain, kiln_range_fn fn, void* ctx) {
  int expected = 0;
  int parts = P.workers + 1;
  if (call_threads > 0 && call_threads < parts) parts = call_threads;
  if (n <= 0) return;
  if (n < 2 || n < grain || parts == 1 ||
      !__atomic_compare_exchange_n(&P.busy, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
    fn(ctx, 0, n);
    return;
  }
  if (!__atomic_load_n(&P.started, __ATOMIC_ACQUIRE) && start_workers() == 0) {
    __atomic_store_n(&P.busy, 0, __ATOMIC_RELEASE);
    fn(ctx, 0, n);
    return;
  }
  /* NOTE: thread k's share is the k-th of n split evenly, so consecutive kernels parallel over
     the same axis (rows, mostly) find the data they read in the cache of the core that wrote
     it. Small CNN, 2 threads, three runs of 5000 calls each: with one counter shared by all
     threads no call took under 170 us and the most common took 170-180; with shares, 1700-2400
     calls took 160-170 us. 4 chunks per share: a thread that arrives late or is descheduled
     leaves its share to the others, at the price of one atomic add per chunk. */
  P.fn = fn;
  P.ctx = ctx;
  __atomic_store_n(&P.caller_cpu, sched_getcpu(), __ATOMIC_RELAXED);
  P.parts = parts;
  P.chunk = (n + 4 * parts - 1) / (4 * parts);
  for (int k = 0; k < parts; ++k) {
    __atomic_store_n(&P.home[k].next, n * k / parts, __ATOMIC_RELAXED);
    P.home[k].end = n * (k + 1) / parts;
  }
  __atomic_store_n(&P.state, OPEN, __ATOMIC_RELEASE);
  __atomic_fetch_add(&P.gen, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&P.sleepers, __ATOMIC_SEQ_CST) > 0) {
    syscall(SYS_futex, &P.gen, FUTEX_WAKE_PRIVATE, P.workers, NULL, NULL, 0);
  }
  run_chunks(0);
  __atomic_fetch_and(&P.state, ~OPEN, __ATOMIC_ACQ_REL);
  for (unsigned i = 0; __atomic_load_n(&P.state, __ATOMIC_ACQUIRE) != 0; ++i) {
    if (i < 256) {
      cpu_relax();
    } else {
      sched_yield(); /* a worker holding a chunk was descheduled */
    }
  }
  __atomic_store_n(&P.busy, 0, __ATOMIC_RELEASE);
}

/* (n: int) -> the calling thread's previous cap (see the header); n <= 0 removes it. */
TVM_FFI_DLL_EXPORT int __tvm_ffi___kiln_pool_call_threads(void* self, const TVMFFIAny* args,
                                                          int32_t num_args, TVMFFIAny* result) {
  (void)self;
  if (num_args != 1 || args[0].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "__kiln_pool_call_threads takes one int");
    return -1;
  }
  int64_t n = args[0].v_int64;
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = call_threads;
  call_threads = n <= 0 ? 0 : (n > KILN_POOL_MAX ? KILN_POOL_MAX : (int)n);
  return 0;
}

/* Bumped whenever KilnPoolApi or the meaning of one of its functions changes
   (kiln/runtime/vm_runtime.py POOL_ABI_VERSION). */
#define KILN_POOL_ABI_VERSION 1

typedef struct {
  int64_t abi_version;
  void (*init)(int threads, int64_t spin_ns);
  int (*threads)(void);
  void (*run)(int64_t n, int64_t grain, kiln_range_fn fn, void* ctx);
} KilnPoolApi;

static const KilnPoolApi kiln_pool_api = {KILN_POOL_ABI_VERSION, kiln_pool_init,
                                          kiln_pool_threads, kiln_pool_run};

/* () -> the address of this copy's KilnPoolApi (an int); no side effect. */
TVM_FFI_DLL_EXPORT int __tvm_ffi___kiln_thread_pool(void* self, const TVMFFIAny* args,
                                                    int32_t num_args, TVMFFIAny* result) {
  (void)self;
  (void)args;
  if (num_args != 0) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "__kiln_thread_pool takes no arguments");
    return -1;
  }
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = (int64_t)(intptr_t)&kiln_pool_api;
  return 0;
}
