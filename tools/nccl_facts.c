/*
 * nccl_facts: what does the loaded NCCL really do with windows? Asks it
 * each question this suite's docs and diagnoses rely on and prints one line
 * per fact: an id, the question, what NCCL did (result, window NULL or not,
 * NCCL's last error) and whether the fact's control behaved normally.
 *
 *   make -C tools facts
 *   tools/nccl_facts [--ranks N] [--tsv] [--only ID] [--timeout S]
 *
 * --ranks N runs every fact with N ranks, threads of one process; more
 * ranks than GPUs share them (NCCL >= 2.30 and NCCL_MULTI_RANK_GPU_ENABLE,
 * which the probe sets for its children). --tsv prints the same facts as
 * tab-separated values, the form docs/facts/ records and `make test`
 * compares. Exit status: 0; 1 if a fact could not be asked at all, or no
 * GPU is visible (every fact then says n/a and why); 2 for a usage error.
 *
 * Each fact runs in a child process of its own, with its variables set
 * (NCCL reads most of them once per process), under a time limit: a fact
 * that hangs says so. Each fact has a control that must behave normally: a
 * whole ncclMemAlloc buffer that must get a window (register.memalloc, in
 * the same communicator, or run on its own for the facts that change a
 * variable), or config.CTAPolicy = ZERO without the variable for the
 * NCCL_CTA_POLICY facts. Where the control fails, the fact says "control
 * failed" instead of a conclusion.
 */
#include <errno.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dlfcn.h>
#include <stdbool.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "engine.h"

/* Note: record() takes the result of a call made before it, never the call
 * itself: C leaves the order of argument evaluation open, and the window
 * must be read after the call. */

#define MIB        ((size_t)1 << 20)
#define LOOP_TIMES 1000

/* What every window handle holds before the call that should write it: a
 * value NCCL never hands out, so that "NCCL wrote NULL" and "NCCL wrote
 * nothing" differ (NCCL 2.28.3 returns ncclSuccess without writing the
 * handle where it has no window to give). */
#define NOT_WRITTEN ((ncclWindow_t)(uintptr_t)0x5e47)

/* outcome.window: what the handle held after the call. */
enum { WIN_NONE = -1, WIN_NULL = 0, WIN_SET = 1, WIN_NOT_WRITTEN = 2 };

static int window_state(ncclWindow_t w)
{
  return w == NOT_WRITTEN ? WIN_NOT_WRITTEN : w == NULL ? WIN_NULL : WIN_SET;
}

static const char *window_word(int state)
{
  return state == WIN_NOT_WRITTEN ? "not written"
         : state == WIN_NULL      ? "NULL"
         : state == WIN_SET       ? "non-NULL"
                                  : "-";
}

/* 1 if NCCL wrote a handle there that must be deregistered. */
static int held(ncclWindow_t w) { return window_state(w) == WIN_SET; }

/* Deregisters win if NCCL wrote it, then frees buf (an ncclMemAlloc
 * buffer, or NULL). */
static void release(ncclComm_t comm, ncclWindow_t win, void *buf)
{
  if (held(win))
    ncclCommWindowDeregister(comm, win);
  if (buf)
    ncclMemFree(buf);
}

/* What one rank saw for one fact. */
typedef struct outcome {
  int control_ok;        /* the control behaved normally */
  char control_why[128]; /* else why not */
  ncclResult_t result;   /* the call the fact is about */
  int window;            /* WIN_SET, WIN_NULL, WIN_NOT_WRITTEN, WIN_NONE */
  char last_error[160];  /* ncclGetLastError after the call */
  char detail[160];      /* the fact's own finding, if any */
  char na[160];          /* the fact cannot be asked here: why */
} outcome;

typedef struct fact fact;
typedef void (*fact_fn)(const fact *, ncclComm_t, int rank, int nranks,
                        outcome *);
struct fact {
  const char *id;
  const char *question;
  const char *env;     /* "NAME=VALUE" set in the child, or NULL */
  const char *control; /* the fact run without env that is its control, or
                          NULL: the control runs inside the fact */
  int min_ranks;       /* 1, or 2 for facts about communication */
  int cta_zero;        /* the communicator asks for CTAPolicy ZERO */
  fact_fn run;
};

/* checks.h's call tracking, which common/src/engine.c's WATCHED calls
 * note: this probe has no watchdog (each fact has a time limit instead). */
void call_begin(const char *call, const char *file, int line)
{
  (void)call, (void)file, (void)line;
}
void call_end(void) {}

/* print_error for common/src/engine.c (CUPTI's failures). */
void print_error(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fputs("nccl_facts: ", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
}

static void note(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void note(char *buf, size_t size, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, size, fmt, ap);
  va_end(ap);
}

/* The result and last error of a call the fact is about. */
static void record(outcome *o, ncclComm_t comm, ncclResult_t res, int window)
{
  o->result = res;
  o->window = window;
  const char *last = ncclGetLastError(comm);
  note(o->last_error, sizeof o->last_error, "%s", last ? last : "");
  for (char *c = o->last_error; *c; c++) /* one line, one TSV field */
    if (*c == '\n' || *c == '\t')
      *c = ' ';
}

/* ncclMemAlloc, or a note in the fact's detail that it failed. */
static int mem_alloc(void **buf, size_t size, outcome *o)
{
  if (ncclMemAlloc(buf, size) == ncclSuccess)
    return 1;
  note(o->detail, sizeof o->detail, "ncclMemAlloc of %zu MiB failed",
       size / MIB);
  return 0;
}

/* The control: a whole ncclMemAlloc buffer must get a window. */
static int control(ncclComm_t comm, outcome *o)
{
  void *buf = NULL;
  ncclWindow_t win = NOT_WRITTEN;
  ncclResult_t res = ncclMemAlloc(&buf, 4 * MIB);
  if (res == ncclSuccess)
    res = ncclCommWindowRegister(comm, buf, 4 * MIB, &win,
                                 NCCL_WIN_COLL_SYMMETRIC);
  o->control_ok = res == ncclSuccess && held(win);
  if (!o->control_ok)
    note(o->control_why, sizeof o->control_why, "%s, window %s",
         ncclGetErrorString(res), window_word(window_state(win)));
  release(comm, win, buf);
  return o->control_ok;
}

/* register.memalloc, and the facts that only change a variable: a whole
 * ncclMemAlloc buffer. */
static void fact_memalloc(const fact *f, ncclComm_t comm, int rank, int nranks,
                          outcome *o)
{
  (void)f, (void)rank, (void)nranks;
  void *buf = NULL;
  ncclWindow_t win = NOT_WRITTEN;
  ncclResult_t res = ncclMemAlloc(&buf, 4 * MIB);
  if (res == ncclSuccess)
    res = ncclCommWindowRegister(comm, buf, 4 * MIB, &win,
                                 NCCL_WIN_COLL_SYMMETRIC);
  record(o, comm, res, window_state(win));
  o->control_ok = 1; /* its control is register.memalloc run alone */
  release(comm, win, buf);
}

static void fact_cudamalloc(const fact *f, ncclComm_t comm, int rank,
                            int nranks, outcome *o)
{
  (void)f, (void)rank, (void)nranks;
  control(comm, o);
  void *buf = NULL;
  ncclWindow_t win = NOT_WRITTEN;
  if (cudaMalloc(&buf, 4 * MIB) != cudaSuccess) {
    note(o->detail, sizeof o->detail, "cudaMalloc failed");
    return;
  }
  ncclResult_t res =
      ncclCommWindowRegister(comm, buf, 4 * MIB, &win, NCCL_WIN_COLL_SYMMETRIC);
  record(o, comm, res, window_state(win));
  if (held(win))
    ncclCommWindowDeregister(comm, win);
  cudaFree(buf);
}

/* A part of an ncclMemAlloc buffer: 256 bytes in, or the first half. */
static void fact_part(const fact *f, ncclComm_t comm, int rank, int nranks,
                      outcome *o)
{
  (void)rank, (void)nranks;
  control(comm, o);
  const size_t offset = strcmp(f->id, "register.offset256") == 0 ? 256 : 0;
  char *buf = NULL;
  ncclWindow_t win = NOT_WRITTEN;
  if (!mem_alloc((void **)&buf, 4 * MIB, o))
    return;
  ncclResult_t res = ncclCommWindowRegister(comm, buf + offset, 2 * MIB, &win,
                                            NCCL_WIN_COLL_SYMMETRIC);
  record(o, comm, res, window_state(win));
  release(comm, win, buf);
}

static void fact_twice(const fact *f, ncclComm_t comm, int rank, int nranks,
                       outcome *o)
{
  (void)f, (void)rank, (void)nranks;
  control(comm, o);
  void *buf = NULL;
  ncclWindow_t first = NOT_WRITTEN, second = NOT_WRITTEN;
  if (!mem_alloc(&buf, 4 * MIB, o))
    return;
  ncclResult_t res1 = ncclCommWindowRegister(comm, buf, 4 * MIB, &first,
                                             NCCL_WIN_COLL_SYMMETRIC);
  ncclResult_t res2 = ncclCommWindowRegister(comm, buf, 4 * MIB, &second,
                                             NCCL_WIN_COLL_SYMMETRIC);
  record(o, comm, res2, window_state(second));
  note(o->detail, sizeof o->detail,
       "first registration: %s, window %s; second window %s the first",
       ncclGetErrorString(res1), window_word(window_state(first)),
       held(second) && second == first ? "is" : "is not");
  /* Each handle once, even where both are one (a local registration
   * counts its registrations). */
  if (held(second))
    ncclCommWindowDeregister(comm, second);
  if (held(first))
    ncclCommWindowDeregister(comm, first);
  ncclMemFree(buf);
}

/* ncclMemFree while the buffer's window is registered; the communicator's
 * destruction then takes the window with it. */
static void fact_free_first(const fact *f, ncclComm_t comm, int rank,
                            int nranks, outcome *o)
{
  (void)f, (void)rank, (void)nranks;
  control(comm, o);
  void *buf = NULL;
  ncclWindow_t win = NOT_WRITTEN;
  if (!mem_alloc(&buf, 4 * MIB, o))
    return;
  ncclCommWindowRegister(comm, buf, 4 * MIB, &win, NCCL_WIN_COLL_SYMMETRIC);
  record(o, comm, ncclMemFree(buf), WIN_NONE);
  note(o->detail, sizeof o->detail, "its window was %s",
       window_word(window_state(win)));
}

/* Rank r registers (1 + r) MiB, then an AllReduce of 1024 floats runs in
 * those windows; verified. */
static void fact_sizes_differ(const fact *f, ncclComm_t comm, int rank,
                              int nranks, outcome *o)
{
  (void)f;
  control(comm, o);
  const size_t size = (1 + (size_t)rank) * MIB, count = 1024;
  float *send = NULL, *recv = NULL;
  ncclWindow_t sw = NOT_WRITTEN, rw = NOT_WRITTEN;
  if (!mem_alloc((void **)&send, size, o))
    return;
  if (!mem_alloc((void **)&recv, size, o)) {
    ncclMemFree(send);
    return;
  }
  ncclResult_t res =
      ncclCommWindowRegister(comm, send, size, &sw, NCCL_WIN_COLL_SYMMETRIC);
  if (res == ncclSuccess)
    res =
        ncclCommWindowRegister(comm, recv, size, &rw, NCCL_WIN_COLL_SYMMETRIC);
  record(o, comm, res, held(sw) && held(rw) ? WIN_SET : window_state(sw));
  if (res == ncclSuccess) {
    float host[1024];
    for (size_t i = 0; i < count; i++)
      host[i] = (float)rank;
    cudaStream_t s;
    cudaError_t setup = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    /* On the AllReduce's stream: a pageable copy may land late. */
    if (setup == cudaSuccess)
      setup = cudaMemcpyAsync(send, host, sizeof host, cudaMemcpyHostToDevice,
                              s);
    if (setup != cudaSuccess) {
      note(o->detail, sizeof o->detail, "setting up the AllReduce: %s",
           cudaGetErrorName(setup));
      goto deregister;
    }
    ncclResult_t ar =
        ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, s);
    cudaError_t sync = cudaStreamSynchronize(s);
    if (sync == cudaSuccess)
      sync = cudaMemcpy(host, recv, sizeof host, cudaMemcpyDeviceToHost);
    const float want = (float)nranks * (float)(nranks - 1) / 2;
    int wrong = 0;
    for (size_t i = 0; i < count; i++)
      wrong += host[i] != want;
    note(o->detail, sizeof o->detail,
         "rank %d registered %zu MiB; AllReduce in them: %s, %s, %d of %zu"
         " wrong",
         rank, size / MIB, ncclGetErrorString(ar), cudaGetErrorName(sync),
         wrong, count);
    cudaStreamDestroy(s);
  }
deregister:
  release(comm, rw, recv);
  release(comm, sw, send);
}

/* Register and deregister one buffer LOOP_TIMES times: does it ever fail? */
static void fact_loop(const fact *f, ncclComm_t comm, int rank, int nranks,
                      outcome *o)
{
  (void)f, (void)rank, (void)nranks;
  control(comm, o);
  void *buf = NULL;
  if (!mem_alloc(&buf, 64 * MIB, o))
    return;
  int i, nulls = 0, unwritten = 0;
  ncclResult_t res = ncclSuccess;
  for (i = 0; i < LOOP_TIMES && res == ncclSuccess; i++) {
    ncclWindow_t win = NOT_WRITTEN;
    res = ncclCommWindowRegister(comm, buf, 64 * MIB, &win,
                                 NCCL_WIN_COLL_SYMMETRIC);
    nulls += res == ncclSuccess && window_state(win) == WIN_NULL;
    unwritten += res == ncclSuccess && window_state(win) == WIN_NOT_WRITTEN;
    if (held(win))
      res = ncclCommWindowDeregister(comm, win);
  }
  record(o, comm, res, WIN_NONE);
  if (res == ncclSuccess)
    note(o->detail, sizeof o->detail,
         "%d of %d registrations of 64 MiB succeeded, %d NULL windows%s", i,
         LOOP_TIMES, nulls, unwritten ? ", some handles not written" : "");
  else
    note(o->detail, sizeof o->detail, "failed at registration %d of %d", i,
         LOOP_TIMES);
  ncclMemFree(buf);
}

/* An AllGather of 1 MiB per rank in windows: what ran, as CUPTI saw it on
 * this rank (kernels or copies only). */
static void fact_what_ran(const fact *f, ncclComm_t comm, int rank, int nranks,
                          outcome *o)
{
  (void)f;
  control(comm, o);
  const size_t bytes = MIB;
  char *send = NULL, *recv = NULL;
  ncclWindow_t sw = NOT_WRITTEN, rw = NOT_WRITTEN;
  if (!mem_alloc((void **)&send, bytes, o))
    return;
  if (!mem_alloc((void **)&recv, bytes * (size_t)nranks, o)) {
    ncclMemFree(send);
    return;
  }
  ncclCommWindowRegister(comm, send, bytes, &sw, NCCL_WIN_COLL_SYMMETRIC);
  ncclCommWindowRegister(comm, recv, bytes * (size_t)nranks, &rw,
                         NCCL_WIN_COLL_SYMMETRIC);
  cudaStream_t s;
  int device = 0;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
      cudaGetDevice(&device) != cudaSuccess) {
    note(o->detail, sizeof o->detail, "no stream or device for the AllGather");
    release(comm, rw, recv);
    release(comm, sw, send);
    return;
  }
  int measured = engine_probe_start();
  uint64_t t0 = engine_probe_now();
  ncclResult_t res = ncclAllGather(send, recv, bytes, ncclChar, comm, s);
  record(o, comm, res, held(sw) && held(rw) ? WIN_SET : window_state(sw));
  cudaStreamSynchronize(s);
  engine_work w;
  if (measured && engine_probe_collect(device, t0, engine_probe_now(), &w)) {
    if (w.kernels == 0 && w.copies > 0)
      note(o->detail, sizeof o->detail, "copy engines: 0 kernels, %ld copies",
           w.copies);
    else
      note(o->detail, sizeof o->detail, "kernels: %s%s",
           w.nnames ? w.names[0] : "?", w.nnames > 1 ? ", ..." : "");
  } else {
    note(o->detail, sizeof o->detail, "not measured: %s",
         engine_probe_unavailable());
  }
  if (measured)
    engine_probe_stop();
  (void)rank;
  cudaStreamDestroy(s);
  release(comm, rw, recv);
  release(comm, sw, send);
}

/* A registration inside ncclGroupStart/ncclGroupEnd: what the handle holds
 * before the group ends (NCCL 2.30.7 makes registration a group task) and
 * after. */
static void fact_grouped(const fact *f, ncclComm_t comm, int rank, int nranks,
                         outcome *o)
{
  (void)f, (void)rank, (void)nranks;
  control(comm, o);
  void *buf = NULL;
  ncclWindow_t win = NOT_WRITTEN;
  if (!mem_alloc(&buf, 4 * MIB, o))
    return;
  ncclResult_t res = ncclGroupStart();
  if (res == ncclSuccess)
    res = ncclCommWindowRegister(comm, buf, 4 * MIB, &win,
                                 NCCL_WIN_COLL_SYMMETRIC);
  const int before = window_state(win);
  ncclResult_t end = ncclGroupEnd();
  record(o, comm, res == ncclSuccess ? end : res, window_state(win));
  note(o->detail, sizeof o->detail,
       "before ncclGroupEnd the handle was %s; ncclGroupEnd: %s",
       window_word(before), ncclGetErrorString(end));
  release(comm, win, buf);
}

/* Is the window the handle of an ordinary local registration? NCCL hands
 * back the same local registration for the same buffer, so compare it
 * with what ncclCommRegister gives. */
static void fact_local_handle(const fact *f, ncclComm_t comm, int rank,
                              int nranks, outcome *o)
{
  (void)f, (void)rank, (void)nranks;
  control(comm, o);
  void *buf = NULL, *local = NULL;
  ncclWindow_t win = NOT_WRITTEN;
  if (!mem_alloc(&buf, 4 * MIB, o))
    return;
  ncclResult_t res =
      ncclCommWindowRegister(comm, buf, 4 * MIB, &win, NCCL_WIN_COLL_SYMMETRIC);
  record(o, comm, res, window_state(win));
  ncclResult_t reg = ncclCommRegister(comm, buf, 4 * MIB, &local);
  note(o->detail, sizeof o->detail,
       "ncclCommRegister of the same buffer: %s; its handle %s the window",
       ncclGetErrorString(reg),
       reg == ncclSuccess && held(win) && local == (void *)win ? "is"
                                                               : "is not");
  if (reg == ncclSuccess && local != NULL)
    ncclCommDeregister(comm, local);
  release(comm, win, buf);
}

/* ncclCommDestroy while a window is still registered, on a communicator
 * split off for it; the buffer is freed after. */
static void fact_destroy_registered(const fact *f, ncclComm_t comm, int rank,
                                    int nranks, outcome *o)
{
  (void)f, (void)nranks;
  control(comm, o);
  ncclComm_t split = NULL;
  void *buf = NULL;
  ncclWindow_t win = NOT_WRITTEN;
  if (ncclCommSplit(comm, 0, rank, &split, NULL) != ncclSuccess) {
    note(o->detail, sizeof o->detail, "ncclCommSplit failed");
    return;
  }
  if (!mem_alloc(&buf, 4 * MIB, o))
    return;
  ncclCommWindowRegister(split, buf, 4 * MIB, &win, NCCL_WIN_COLL_SYMMETRIC);
  const int state = window_state(win);
  ncclResult_t fin = ncclCommFinalize(split);
  ncclResult_t res = ncclCommDestroy(split);
  record(o, comm, res, state);
  ncclResult_t freed = ncclMemFree(buf);
  note(o->detail, sizeof o->detail,
       "ncclCommFinalize: %s; ncclMemFree after: %s", ncclGetErrorString(fin),
       ncclGetErrorString(freed));
}

/* A registration while the calling thread captures a CUDA graph (global
 * capture mode, cudaStreamBeginCapture's strictest). */
static void fact_graph_capture(const fact *f, ncclComm_t comm, int rank,
                               int nranks, outcome *o)
{
  (void)f, (void)rank, (void)nranks;
  control(comm, o);
  void *buf = NULL;
  ncclWindow_t win = NOT_WRITTEN;
  cudaStream_t s;
  if (!mem_alloc(&buf, 4 * MIB, o))
    return;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
      cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) != cudaSuccess) {
    note(o->detail, sizeof o->detail, "could not start a capture");
    ncclMemFree(buf);
    return;
  }
  ncclResult_t res =
      ncclCommWindowRegister(comm, buf, 4 * MIB, &win, NCCL_WIN_COLL_SYMMETRIC);
  record(o, comm, res, window_state(win));
  cudaGraph_t graph = NULL;
  cudaError_t end = cudaStreamEndCapture(s, &graph);
  note(o->detail, sizeof o->detail, "cudaStreamEndCapture: %s",
       cudaGetErrorName(end));
  if (graph)
    cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
  release(comm, win, buf);
}

/* ncclCommQueryProperties (NCCL >= 2.29) is declared only in
 * nccl_device/core.h, a CUDA C++ header a C11 program cannot include. The
 * probe looks the function up at run time and passes the struct as NCCL
 * 2.30.7's core.h lays it out; size, magic and version in its head say
 * which layout it is. A layout fact, not NCCL's code. */
typedef struct props_2_30 {
  /* Read by NCCL only: */
  // cppcheck-suppress unusedStructMember
  size_t size;
  // cppcheck-suppress unusedStructMember
  unsigned int magic; /* NCCL_API_MAGIC of nccl.h: 0xcafebeef */
  // cppcheck-suppress unusedStructMember
  unsigned int version; /* the layout's NCCL version code */
  int rank, nRanks, cudaDev;
  // cppcheck-suppress unusedStructMember
  int nvmlDev; /* the layout's: not printed */
  bool deviceApiSupport, multimemSupport;
  int ginType; /* an enum in core.h */
  int nLsaTeams;
  // cppcheck-suppress unusedStructMember
  bool hostRmaSupport; /* the layout's: not printed */
  // cppcheck-suppress unusedStructMember
  int railedGinType; /* an enum; the layout's: not printed */
} props_2_30;

static void fact_properties(const fact *f, ncclComm_t comm, int rank,
                            int nranks, outcome *o)
{
  (void)f, (void)rank, (void)nranks;
  control(comm, o);
  int loaded = 0;
  ncclGetVersion(&loaded);
  typedef ncclResult_t (*query_fn)(ncclComm_t, props_2_30 *);
  query_fn query = NULL;
  *(void **)&query = dlsym(RTLD_DEFAULT, "ncclCommQueryProperties");
  if (query == NULL || loaded < 23000) {
    note(o->na, sizeof o->na, "%s; the probe knows the layout of NCCL 2.30",
         query ? "this NCCL is older than 2.30"
               : "this NCCL's library has no ncclCommQueryProperties");
    return;
  }
  props_2_30 p = {.size = sizeof p, .magic = 0xcafebeef, .version = 23007};
  ncclResult_t res = query(comm, &p);
  record(o, comm, res, WIN_NONE);
  if (res == ncclSuccess)
    note(o->detail, sizeof o->detail,
         "rank %d of %d, cudaDev %d, deviceApiSupport %d, multimemSupport "
         "%d, nLsaTeams %d, ginType %d",
         p.rank, p.nRanks, p.cudaDev, p.deviceApiSupport, p.multimemSupport,
         p.nLsaTeams, p.ginType);
}

static const fact facts[] = {
    {"register.memalloc", "a whole ncclMemAlloc buffer (the control)", NULL,
     NULL, 1, 0, fact_memalloc},
    {"register.cudamalloc", "a cudaMalloc buffer", NULL, NULL, 1, 0,
     fact_cudamalloc},
    {"register.offset256", "2 MiB from 256 bytes into an ncclMemAlloc buffer",
     NULL, NULL, 1, 0, fact_part},
    {"register.subrange", "the first 2 MiB of a 4 MiB ncclMemAlloc buffer",
     NULL, NULL, 1, 0, fact_part},
    {"register.twice", "the same buffer registered twice", NULL, NULL, 1, 0,
     fact_twice},
    {"memfree.registered", "ncclMemFree before ncclCommWindowDeregister", NULL,
     NULL, 1, 0, fact_free_first},
    {"register.sizes-differ", "sizes that differ per rank, and an AllReduce",
     NULL, NULL, 2, 0, fact_sizes_differ},
    {"register.loop", "register and deregister 1000 times", NULL, NULL, 1, 0,
     fact_loop},
    {"env.win-enable-0", "a whole ncclMemAlloc buffer, NCCL_WIN_ENABLE=0",
     "NCCL_WIN_ENABLE=0", "register.memalloc", 1, 0, fact_memalloc},
    {"env.cumem-enable-0", "a whole ncclMemAlloc buffer, NCCL_CUMEM_ENABLE=0",
     "NCCL_CUMEM_ENABLE=0", "register.memalloc", 1, 0, fact_memalloc},
    {"env.local-register-0",
     "a whole ncclMemAlloc buffer, NCCL_LOCAL_REGISTER=0",
     "NCCL_LOCAL_REGISTER=0", "register.memalloc", 1, 0, fact_memalloc},
    {"cta.config-zero", "AllGather in windows, config.CTAPolicy=ZERO", NULL,
     NULL, 2, 1, fact_what_ran},
    {"cta.env-ZERO", "the same with NCCL_CTA_POLICY=ZERO",
     "NCCL_CTA_POLICY=ZERO", "cta.config-zero", 2, 1, fact_what_ran},
    {"cta.env-2", "the same with NCCL_CTA_POLICY=2", "NCCL_CTA_POLICY=2",
     "cta.config-zero", 2, 1, fact_what_ran},
    {"cta.env-0", "the same with NCCL_CTA_POLICY=0", "NCCL_CTA_POLICY=0",
     "cta.config-zero", 2, 1, fact_what_ran},
    {"cta.env-EFFICIENCY", "the same with NCCL_CTA_POLICY=EFFICIENCY",
     "NCCL_CTA_POLICY=EFFICIENCY", "cta.config-zero", 2, 1, fact_what_ran},
    {"register.grouped", "registration inside ncclGroupStart/ncclGroupEnd",
     NULL, NULL, 1, 0, fact_grouped},
    {"register.local-handle",
     "is the window what ncclCommRegister gives for the buffer?", NULL, NULL,
     1, 0, fact_local_handle},
    {"destroy.registered", "ncclCommDestroy with a window still registered",
     NULL, NULL, 1, 0, fact_destroy_registered},
    {"register.graph-capture", "registration during a CUDA graph capture",
     NULL, NULL, 1, 0, fact_graph_capture},
    {"comm.properties", "ncclCommQueryProperties (NCCL >= 2.29)", NULL, NULL, 1,
     0, fact_properties},
};
#define NFACTS (sizeof facts / sizeof facts[0])

/* ---------------------------------------------------------------- child */

typedef struct rank_job {
  const fact *f;
  int rank, nranks, ngpus;
  ncclUniqueId id;
  outcome out;
  char init_error[160];
} rank_job;

static void *rank_main(void *arg)
{
  rank_job *j = arg;
  ncclComm_t comm = NULL;
  cudaError_t err = cudaSetDevice(j->rank % j->ngpus);
  if (err != cudaSuccess) {
    note(j->init_error, sizeof j->init_error, "cudaSetDevice(%d): %s",
         j->rank % j->ngpus, cudaGetErrorName(err));
    return NULL;
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
  if (j->f->cta_zero)
    config.CTAPolicy = NCCL_CTA_POLICY_ZERO;
#endif
  ncclResult_t res =
      ncclCommInitRankConfig(&comm, j->nranks, j->id, j->rank, &config);
  if (res != ncclSuccess) {
    note(j->init_error, sizeof j->init_error, "ncclCommInitRankConfig: %s",
         ncclGetErrorString(res));
    return NULL;
  }
  j->f->run(j->f, comm, j->rank, j->nranks, &j->out);
  ncclCommFinalize(comm);
  ncclCommDestroy(comm);
  return NULL;
}

/* Runs fact f on nranks threads and writes its TSV fields (after id and
 * ranks) to stdout: control, result, window, last error, detail. */
static int child(const fact *f, int nranks)
{
  int ngpus = 0;
  cudaError_t err = cudaGetDeviceCount(&ngpus);
  if (err != cudaSuccess || ngpus == 0) {
    printf("n/a\t-\t-\t-\tno GPU: %s\n",
           err != cudaSuccess ? cudaGetErrorName(err) : "none visible");
    return 0;
  }
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess)
    return 1;
  rank_job *jobs = calloc((size_t)nranks, sizeof *jobs);
  pthread_t *threads = calloc((size_t)nranks, sizeof *threads);
  if (jobs == NULL || threads == NULL) {
    free(jobs);
    free(threads);
    return 1;
  }
  for (int r = 0; r < nranks; r++) {
    jobs[r] = (rank_job){
        .f = f, .rank = r, .nranks = nranks, .ngpus = ngpus, .id = id};
    jobs[r].out.window = WIN_NONE;
  }
  int started = 0;
  while (started < nranks &&
         pthread_create(&threads[started], NULL, rank_main, &jobs[started]) ==
             0)
    started++;
  if (started < nranks) { /* the ranks started wait for it for ever */
    fprintf(stderr, "nccl_facts: could not start rank %d's thread\n", started);
    return 1; /* the child process ends, and its threads with it */
  }
  for (int r = 0; r < nranks; r++)
    pthread_join(threads[r], NULL);
  const outcome *o = &jobs[0].out;
  int differ = 0;
  for (int r = 1; r < nranks; r++)
    differ |= jobs[r].out.result != o->result ||
              jobs[r].out.window != o->window ||
              jobs[r].out.control_ok != o->control_ok;
  if (jobs[0].init_error[0])
    printf("n/a\t-\t-\t-\t%s\n", jobs[0].init_error);
  else if (o->na[0])
    printf("n/a\t-\t-\t-\t%s\n", o->na);
  else
    printf("%s\t%s\t%s\t%s\t%s%s\n", o->control_ok ? "ok" : "control failed",
           ncclGetErrorString(o->result),
           window_word(o->window),
           o->last_error[0] ? o->last_error : "-",
           o->control_ok ? o->detail : o->control_why,
           differ ? " (other ranks differ)" : "");
  fflush(stdout);
  free(threads);
  free(jobs);
  return 0;
}

/* --------------------------------------------------------------- parent */

/* Whether each fact behaved as a control must: a window for
 * register.memalloc, the copy engines for cta.config-zero. */
static int normal[64];
static int no_gpu; /* a child found no GPU: nothing could be asked */

static int index_of(const char *id)
{
  for (int i = 0; i < (int)(sizeof facts / sizeof facts[0]); i++)
    if (strcmp(facts[i].id, id) == 0)
      return i;
  return -1;
}

/* Runs fact f in a child process (its variables set, a time limit) and
 * prints its line. */
static int ask(const fact *f, int nranks, int nccl, int tsv, int limit)
{
  char line[1024] = "";
  if (nranks < f->min_ranks) {
    snprintf(line, sizeof line, "n/a\t-\t-\t-\tneeds %d ranks\n", f->min_ranks);
  } else {
    int fd[2];
    if (pipe(fd) != 0)
      return 1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
      return 1;
    if (pid == 0) {
      close(fd[0]);
      dup2(fd[1], STDOUT_FILENO);
      if (f->env)
        putenv((char *)f->env);
      alarm((unsigned)limit); /* a hang ends the child */
      int status = child(f, nranks);
      fflush(stdout);
      _exit(status);
    }
    close(fd[1]);
    size_t len = 0;
    ssize_t got;
    while ((got = read(fd[0], line + len, sizeof line - 1 - len)) > 0)
      len += (size_t)got;
    line[len] = '\0';
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
      snprintf(line, sizeof line, "hung\t-\t-\t-\tno answer within %d s\n",
               limit);
    else if (len == 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      snprintf(line, sizeof line, "failed\t-\t-\t-\tthe child %s %d\n",
               WIFSIGNALED(status) ? "died of signal" : "exited with",
               WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  }
  /* line: control, result, window, last error, detail (TSV). */
  char *field[5] = {0};
  char *p = line;
  for (int i = 0; i < 5; i++) {
    field[i] = p;
    p += strcspn(p, i < 4 ? "\t" : "\n");
    if (*p)
      *p++ = '\0';
  }
  no_gpu |= strcmp(field[0], "n/a") == 0 && strncmp(field[4], "no GPU: ", 8) == 0;
  normal[index_of(f->id)] = strcmp(field[0], "ok") == 0 &&
                            (strcmp(f->id, "cta.config-zero") == 0
                                 ? strncmp(field[4], "copy engines", 12) == 0
                                 : strcmp(field[1], "no error") == 0 &&
                                       strcmp(field[2], "non-NULL") == 0);
  char why[200];
  if (f->control && strcmp(field[0], "ok") == 0 &&
      !normal[index_of(f->control)]) {
    snprintf(why, sizeof why, "%s did not behave normally", f->control);
    field[0] = "control failed";
    field[4] = why;
  }
  if (tsv) {
    printf("%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", f->id, nccl, nranks, field[0],
           field[1], field[2], field[3], field[4]);
  } else {
    printf("%-22s %s\n", f->id, f->question);
    if (strcmp(field[0], "ok") == 0)
      printf("%22s %s, window %s; last error: %s%s%s\n", "", field[1], field[2],
             field[3], field[4][0] ? "; " : "", field[4]);
    else
      printf("%22s %s: %s\n", "", field[0], field[4]);
  }
  return 0;
}

static int usage(const char *why)
{
  fprintf(stderr,
          "nccl_facts: %s\nUsage: nccl_facts [--ranks N] [--tsv] [--only ID]"
          " [--timeout S]\n",
          why);
  return 2;
}

int main(int argc, char *argv[])
{
  int nranks = 1, tsv = 0, limit = 60;
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    char *end = NULL;
    if (strcmp(argv[i], "--tsv") == 0) {
      tsv = 1;
    } else if (strcmp(argv[i], "--ranks") == 0 && i + 1 < argc) {
      errno = 0;
      long value = strtol(argv[++i], &end, 10); /* range before the cast */
      if (errno != 0 || end == argv[i] || *end || value < 1 || value > 64)
        return usage("--ranks takes a whole number from 1 to 64");
      nranks = (int)value;
    } else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
      errno = 0;
      long value = strtol(argv[++i], &end, 10);
      if (errno != 0 || end == argv[i] || *end || value < 1 || value > 86400)
        return usage("--timeout takes a whole number of seconds from 1 to"
                     " 86400");
      limit = (int)value;
    } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      printf("Usage: nccl_facts [--ranks N] [--tsv] [--only ID] [--timeout S]\n"
             "Asks the loaded NCCL what it does with windows, one fact per"
             " line (docs/facts/README.md).\n"
             "  --ranks N    run each fact with N ranks, threads of one"
             " process (1 to 64)\n"
             "  --tsv        tab-separated values, the form docs/facts"
             " records\n"
             "  --only ID    only the fact ID (and its control)\n"
             "  --timeout S  a fact that has not answered after S seconds is"
             " hung (default 60)\n"
             "Exit status: 0; 1 if a fact could not be asked, or no GPU is"
             " visible; 2 for a usage error.\n");
      return 0;
    } else {
      return usage("unknown argument");
    }
  }
  int nccl = 0;
  ncclGetVersion(&nccl);
  if (nranks > 1)
    setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 0); /* ranks may share GPUs */
  if (tsv)
    printf("id\tnccl\tranks\tcontrol\tresult\twindow\tlast_error\tdetail\n");
  else
    printf("NCCL %d.%d.%d loaded (built against nccl.h %d), %d rank(s)\n",
           nccl / 10000, nccl % 10000 / 100, nccl % 100, NCCL_VERSION_CODE,
           nranks);
  const int wanted = only ? index_of(only) : -1;
  if (only && wanted < 0)
    return usage("--only names no fact");
  for (size_t i = 0; i < NFACTS; i++) {
    /* With --only, its control too. */
    if (only && (int)i != wanted &&
        !(facts[wanted].control &&
          strcmp(facts[wanted].control, facts[i].id) == 0))
      continue;
    if (ask(&facts[i], nranks, nccl, tsv, limit) != 0) {
      fprintf(stderr, "nccl_facts: could not ask %s: %s\n", facts[i].id,
              strerror(errno));
      return 1;
    }
  }
  if (no_gpu) {
    fprintf(stderr, "nccl_facts: no GPU is visible, so no fact could be"
                    " asked (each says why)\n");
    return 1;
  }
  return 0;
}
