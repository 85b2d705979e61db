/*
 * libwhatran.so: What ran, for an NCCL program this suite did not build.
 *
 *   LD_PRELOAD=/path/to/tools/libwhatran.so PROGRAM ARGS...
 *   [WHATRAN_OUT=FILE] [WHATRAN_JSON=FILE]
 *
 * Preloaded, it sits between the program and NCCL: it notes each
 * communicator (ncclCommInitRank, ncclCommInitRankConfig, ncclCommSplit),
 * each window (ncclCommWindowRegister, ...Deregister: its size and whether
 * the handle came back NULL), and each collective (the call's thread and
 * time, its sizes, whether each buffer lay in a window of its
 * communicator), and records with CUPTI the kernels and copies that each
 * call launched (the instruments' engine: the work whose launching CUDA
 * call the same thread made during the NCCL call, or during the
 * ncclGroupEnd that ended its group). When a communicator is destroyed,
 * and at exit for any left, it classifies the work as the programs' own
 * What ran does (what_ran_describe) and, at exit, writes per communicator
 * one line per distinct outcome, the ranks of this process that share it
 * said once:
 *
 *   What ran (libwhatran): communicator 1, 2 ranks, ranks 0-1:
 *     AllReduce of 4 KiB (3 calls): NCCL's symmetric kernel ...; ...
 *
 * with, for an outcome that is not a symmetric kernel or the copy
 * engines, the buffer that was not in a window. Each process speaks for
 * its own ranks: it makes no collective of its own. Everything goes to
 * stderr (or to WHATRAN_OUT, appended); WHATRAN_JSON appends one JSON
 * object per rank and communicator. It changes nothing the program sees:
 * every call is passed on with its arguments and its result returned.
 * CUPTI failing (or held by a profiler) makes its lines "not measured".
 *
 * Replays of CUDA graphs are said apart: CUPTI ties their work to the graph
 * launch, of no one communicator. Limits: the first MAX_CALLS calls of
 * each communicator are classified (the rest counted).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dlsym(RTLD_NEXT) */
#endif
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "calls.h"
#include "engine.h"
#include "what_ran.h"

#define MAX_WINDOWS 64
#define MAX_CALLS   4096
#define TEXT        512

enum coll { ALLREDUCE, ALLGATHER, REDUCESCATTER, BROADCAST, REDUCE, REPLAY,
            NCOLLS };
static const char *const coll_names[NCOLLS] = {
    "AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce",
    "CUDA graph replays"};

typedef struct window {
  const char *buf;
  size_t size;
  ncclWindow_t *where; /* the program's handle: read once NCCL wrote it */
  ncclWindow_t handle;
  int live;
} window;

typedef struct call {
  enum coll coll;
  size_t bytes;          /* the larger of its buffers */
  int send_in, recv_in;  /* each buffer inside a window of the communicator */
  int send_null, recv_null; /* ... inside a registration whose handle is NULL */
  int captured;          /* queued into a CUDA graph being captured */
  uint32_t thread;
  uint64_t t0, t1;
  int in_group;          /* t1 is the end of its group's ncclGroupEnd */
  char ran[256];         /* its outcome, once classified */
  enum what_class cls;
} call;

typedef struct comm_rec {
  ncclComm_t comm;
  int label;             /* communicator N, as this process numbers them */
  int rank, nranks;
  int done;              /* destroyed: classified, and its handle reusable */
  window windows[MAX_WINDOWS];
  int nwindows;
  call *calls;
  int ncalls;
  long unrecorded;       /* calls past MAX_CALLS */
  struct comm_rec *next;
} comm_rec;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static comm_rec *comms;   /* newest first */
static int measuring = -1; /* -1: not started; then engine_probe_start's */
static _Thread_local int group_depth;

/* Communicators are labelled by their ncclUniqueId: the ranks of one
 * communicator that live in this process get one label. */
#define MAX_LABELS 256
static unsigned char label_ids[MAX_LABELS][sizeof(ncclUniqueId)];
static int nlabels;

/* ---------------------------------------------------------- the output */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
  const char *path = getenv("WHATRAN_OUT");
  FILE *out = path && *path ? fopen(path, "a") : stderr;
  if (out == NULL) {
    fprintf(stderr, "libwhatran: WHATRAN_OUT=%s cannot be opened\n", path);
    out = stderr;
  }
  va_list ap;
  va_start(ap, fmt);
  vfprintf(out, fmt, ap);
  va_end(ap);
  if (out != stderr)
    fclose(out);
}

static void size_text(size_t bytes, char *out, size_t size)
{
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = (double)bytes;
  while (v >= 1024 && u < 4 && (bytes % ((size_t)1 << (10 * (u + 1)))) == 0) {
    v /= 1024;
    u++;
  }
  snprintf(out, size, "%.0f %s", v, units[u]);
}

/* ------------------------------------------------------ the real calls */

/* The next definition of `name` after this library: NCCL's or CUDA's. */
static void *next_of(const char *name)
{
  void *f = dlsym(RTLD_NEXT, name);
  if (f == NULL) {
    fprintf(stderr, "libwhatran: %s is not defined after libwhatran.so"
                    " (NCCL or the CUDA runtime is not loaded): %s\n",
            name, dlerror());
    abort();
  }
  return f;
}
#define NEXT(name)                                                             \
  static __typeof__(name) *next_fn;                                            \
  if (next_fn == NULL)                                                         \
  next_fn = (__typeof__(name) *)next_of(#name)

static uint64_t now(void) { return measuring == 1 ? engine_probe_now() : 0; }

static void start_measuring(void);

/* ------------------------------------------------------ the records */

static comm_rec *find(ncclComm_t comm)
{
  for (comm_rec *c = comms; c; c = c->next)
    if (c->comm == comm && !c->done)
      return c;
  return NULL;
}

static int label_of(const ncclUniqueId *id)
{
  for (int i = 0; i < nlabels; i++)
    if (memcmp(label_ids[i], id, sizeof *id) == 0)
      return i + 1;
  if (nlabels == MAX_LABELS)
    return 0;
  memcpy(label_ids[nlabels++], id, sizeof *id);
  return nlabels;
}

static void add_comm(ncclComm_t comm, int label, int rank, int nranks)
{
  comm_rec *c = calloc(1, sizeof *c);
  call *calls = calloc(MAX_CALLS, sizeof *calls);
  if (c == NULL || calls == NULL) {
    free(c);
    free(calls);
    return; /* out of memory: this communicator goes unsaid */
  }
  *c = (comm_rec){.comm = comm, .label = label, .rank = rank,
                  .nranks = nranks, .calls = calls, .next = comms};
  comms = c;
}

/* Asks NCCL for c's rank and size once the communicator is ready: not
 * while an operation is in progress, inside a group for one (NCCL 2.30.7's
 * ncclCommUserRank then fails and warns, src/init.cc ncclCommEnsureReady);
 * ncclCommGetAsyncError says when (the lock held). */
static void settle(comm_rec *c)
{
  ncclResult_t state = ncclInProgress;
  if (c->rank >= 0 || ncclCommGetAsyncError(c->comm, &state) != ncclSuccess)
    return;
  if (state != ncclSuccess)
    return; /* inside a group, or a non-blocking init still running */
  int rank = -1, nranks = 0;
  if (ncclCommUserRank(c->comm, &rank) == ncclSuccess &&
      ncclCommCount(c->comm, &nranks) == ncclSuccess) {
    c->rank = rank;
    c->nranks = nranks;
  }
}

static void settle_all(void)
{
  for (comm_rec *c = comms; c; c = c->next)
    if (!c->done)
      settle(c);
}

/* A communicator just made: its rank and size from NCCL, now or (inside a
 * group, or while a non-blocking init runs) later. */
static void note_comm(ncclComm_t comm, int label)
{
  pthread_mutex_lock(&lock);
  if (find(comm) == NULL)
    add_comm(comm, label, -1, 0);
  comm_rec *c = find(comm);
  if (c != NULL)
    settle(c);
  pthread_mutex_unlock(&lock);
}

/* The size of comm as far as known, else 0: no NCCL call. */
static int size_of(ncclComm_t comm)
{
  pthread_mutex_lock(&lock);
  comm_rec *c = find(comm);
  int n = c ? c->nranks : 0;
  pthread_mutex_unlock(&lock);
  return n;
}

/* The window of c that holds [p, p + bytes), or NULL; *null: a
 * registration holding it came back NULL. */
static const window *window_of(comm_rec *c, const void *p, size_t bytes,
                               int *null)
{
  const char *b = p;
  for (int i = 0; i < c->nwindows; i++) {
    window *w = &c->windows[i];
    if (!w->live || b < w->buf || b + bytes > w->buf + w->size)
      continue;
    if (w->handle == NULL && w->where != NULL && group_depth == 0)
      w->handle = *w->where; /* written at the group's end */
    if (w->handle != NULL)
      return w;
    *null = 1;
  }
  return NULL;
}

static void note_call(ncclComm_t comm, enum coll coll, const void *send,
                      size_t send_bytes, const void *recv, size_t recv_bytes,
                      cudaStream_t stream, uint64_t t0, uint64_t t1)
{
  enum cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (stream != NULL && cudaStreamIsCapturing(stream, &capture) != cudaSuccess)
    capture = cudaStreamCaptureStatusNone;
  pthread_mutex_lock(&lock);
  comm_rec *c = find(comm);
  if (c != NULL)
    settle(c);
  if (c != NULL && c->ncalls == MAX_CALLS)
    c->unrecorded++;
  else if (c != NULL) {
    call *k = &c->calls[c->ncalls++];
    *k = (call){.coll = coll,
                .bytes = send_bytes > recv_bytes ? send_bytes : recv_bytes,
                .captured = capture != cudaStreamCaptureStatusNone,
                .thread = engine_probe_thread(),
                .t0 = t0,
                .t1 = t1,
                .in_group = group_depth > 0};
    k->send_in = window_of(c, send, send_bytes, &k->send_null) != NULL;
    k->recv_in = window_of(c, recv, recv_bytes, &k->recv_null) != NULL;
  }
  pthread_mutex_unlock(&lock);
}

/* ncclGroupEnd ended: this thread's calls of the group end with it. */
static void end_group(uint64_t t1)
{
  uint32_t me = engine_probe_thread();
  pthread_mutex_lock(&lock);
  settle_all();
  for (comm_rec *c = comms; c; c = c->next) {
    for (int i = 0; i < c->ncalls; i++)
      if (c->calls[i].in_group && c->calls[i].thread == me &&
          c->calls[i].t1 < t1 && !c->done)
        c->calls[i].t1 = t1;
    for (int i = 0; i < c->nwindows; i++)
      if (c->windows[i].live && c->windows[i].handle == NULL &&
          c->windows[i].where != NULL)
        c->windows[i].handle = *c->windows[i].where;
  }
  pthread_mutex_unlock(&lock);
}

/* --------------------------------------------------- classification */

/* Why an outcome is not NCCL's fast path, from what this library saw. */
static void cause(const call *k, char *out, size_t size)
{
  const char *which = !k->send_in && !k->recv_in ? "neither buffer is"
                      : !k->recv_in              ? "the output buffer is not"
                                                 : "the input buffer is not";
  if (k->send_in && k->recv_in)
    snprintf(out, size, ": both buffers are in windows; no known cause found"
                        " (NCCL_DEBUG=INFO says why)");
  else if ((!k->recv_in && k->recv_null) || (!k->send_in && k->send_null))
    snprintf(out, size, ": no window: %s in a window (a handle came back"
                        " NULL)", which);
  else
    snprintf(out, size, ": no window: %s registered", which);
}

/* Calls ordered by thread, then start (for find_call). */
static const call *sort_base;
static int by_thread_then_start(const void *x, const void *y)
{
  const call *a = &sort_base[*(const int *)x], *b = &sort_base[*(const int *)y];
  if (a->thread != b->thread)
    return a->thread < b->thread ? -1 : 1;
  return (a->t0 > b->t0) - (a->t0 < b->t0);
}

/* Classifies c's calls (the lock held): each kernel or copy goes to the
 * call of its launching thread whose time holds the launch (to every call
 * of a group whose end launched it). */
static void classify(comm_rec *c)
{
  int flushed = measuring == 1 && engine_probe_flush();
  engine_piece *pieces = NULL;
  size_t npieces = flushed ? engine_probe_pieces(&pieces) : 0;
  engine_work *work = calloc((size_t)c->ncalls + 1, sizeof *work);
  int *order = calloc((size_t)c->ncalls + 1, sizeof *order);
  for (int i = 0; i < c->ncalls; i++)
    order[i] = i;
  if (work != NULL && order != NULL) {
    sort_base = c->calls;
    qsort(order, (size_t)c->ncalls, sizeof *order, by_thread_then_start);
    for (size_t p = 0; p < npieces; p++) {
      const engine_piece *e = &pieces[p];
      if (e->graph)
        continue; /* a replay's: see replays_text */
      int lo = 0, hi = c->ncalls - 1, last = -1; /* last call begun by then */
      while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const call *k = &c->calls[order[mid]];
        if (k->thread < e->thread ||
            (k->thread == e->thread && k->t0 <= e->launch_start)) {
          last = mid;
          lo = mid + 1;
        } else {
          hi = mid - 1;
        }
      }
      for (int j = last; j >= 0; j--) {
        const call *k = &c->calls[order[j]];
        if (k->thread != e->thread || k->t1 < e->launch_start)
          break;
        engine_work_add(&work[order[j]], e);
      }
    }
  }
  for (int i = 0; i < c->ncalls; i++) {
    call *k = &c->calls[i];
    int known = flushed && work != NULL && order != NULL;
    k->cls = what_ran_describe(known ? &work[i] : NULL, c->nranks, k->ran,
                               sizeof k->ran);
    if (!known)
      snprintf(k->ran, sizeof k->ran, "not measured: %s",
               measuring == 1 ? "CUPTI failed (see its message above)"
                              : engine_probe_unavailable());
    else if (k->captured && k->cls == RAN_NOTHING)
      snprintf(k->ran, sizeof k->ran,
               "captured into a CUDA graph: its work runs at each replay");
    else if (k->cls == RAN_REGULAR && k->coll != REPLAY && c->nranks > 1) {
      char why[160];
      cause(k, why, sizeof why);
      text_add(k->ran, sizeof k->ran, "%s", why);
    }
  }
  free(work);
  free(order);
  free(pieces);
}

/* One communicator's outcomes: "AllReduce of 4 KiB to 64 KiB (3 calls): X;
 * ..." in the order first seen. */
static void outcomes(const comm_rec *c, char *out, size_t size)
{
  out[0] = '\0';
  int *said = calloc((size_t)c->ncalls + 1, sizeof *said);
  if (said == NULL)
    return;
  for (int i = 0; i < c->ncalls; i++) {
    if (said[i])
      continue;
    const call *k = &c->calls[i];
    size_t lo = k->bytes, hi = k->bytes;
    int n = 0;
    for (int j = i; j < c->ncalls; j++) {
      const call *o = &c->calls[j];
      if (said[j] || o->coll != k->coll || strcmp(o->ran, k->ran) != 0)
        continue;
      said[j] = 1;
      n++;
      lo = o->bytes < lo ? o->bytes : lo;
      hi = o->bytes > hi ? o->bytes : hi;
    }
    char a[32], b[32];
    size_text(lo, a, sizeof a);
    size_text(hi, b, sizeof b);
    if (k->coll == REPLAY)
      text_add(out, size, "%s%s (%d launch%s): %s", out[0] ? "; " : "",
               coll_names[k->coll], n, n == 1 ? "" : "es", k->ran);
    else
      text_add(out, size, "%s%s of %s%s%s (%d call%s): %s",
               out[0] ? "; " : "", coll_names[k->coll], a, lo != hi ? " to " : "",
               lo != hi ? b : "", n, n == 1 ? "" : "s", k->ran);
  }
  if (c->ncalls == 0)
    text_add(out, size, "no collective");
  if (c->unrecorded > 0)
    text_add(out, size, "; %ld later calls not classified", c->unrecorded);
  free(said);
}

static void windows_text(const comm_rec *c, char *out, size_t size)
{
  const int n = c->nwindows;
  int nulls = 0;
  out[0] = '\0';
  text_add(out, size, "%d window%s registered%s", n, n == 1 ? "" : "s",
           n ? " (" : "");
  for (int i = 0; i < n; i++) {
    char s[32];
    size_text(c->windows[i].size, s, sizeof s);
    text_add(out, size, "%s%s%s", i ? ", " : "", s,
             c->windows[i].handle == NULL ? " NULL" : "");
    nulls += c->windows[i].handle == NULL;
  }
  if (n)
    text_add(out, size, ")%s", nulls ? ": a NULL handle means no window" : "");
}

/* ------------------------------------------------------------ at exit */

static int by_launch(const void *x, const void *y)
{
  uint32_t a = ((const engine_piece *)x)->launch,
           b = ((const engine_piece *)y)->launch;
  return (a > b) - (a < b);
}

/* Replays of CUDA graphs: the work CUPTI ties to a graph launch
 * (cuGraphLaunch or cudaGraphLaunch, static or dynamic runtime alike),
 * each launch described, launches that ran the same said once. */
static void replays_report(void)
{
  if (measuring != 1 || !engine_probe_flush())
    return;
  engine_piece *pieces = NULL;
  size_t n = engine_probe_pieces(&pieces);
  qsort(pieces, n, sizeof *pieces, by_launch);
  comm_rec r = {.nranks = 2, /* not one rank's local copy: it is not known */
                .calls = calloc(MAX_CALLS, sizeof(call))};
  engine_work w = {0};
  for (size_t i = 0; r.calls != NULL && i < n; i++) {
    if (!pieces[i].graph)
      continue;
    engine_work_add(&w, &pieces[i]);
    int last = i + 1 == n || !pieces[i + 1].graph ||
               pieces[i + 1].launch != pieces[i].launch;
    if (!last)
      continue;
    if (r.ncalls == MAX_CALLS) {
      r.unrecorded++;
    } else {
      call *k = &r.calls[r.ncalls++];
      k->coll = REPLAY;
      k->cls = what_ran_describe(&w, r.nranks, k->ran, sizeof k->ran);
    }
    memset(&w, 0, sizeof w);
  }
  if (r.ncalls > 0) {
    char text[2 * TEXT];
    outcomes(&r, text, sizeof text);
    say("What ran (libwhatran): %s\n", text);
  }
  free(r.calls);
  free(pieces);
}

static void json_string(FILE *f, const char *s)
{
  fputc('"', f);
  for (; *s; s++)
    if (*s == '"' || *s == '\\')
      fprintf(f, "\\%c", *s);
    else if ((unsigned char)*s < 0x20)
      fprintf(f, "\\u%04x", *s);
    else
      fputc(*s, f);
  fputc('"', f);
}

static void write_json(const comm_rec *c, const char *ran, const char *wins)
{
  const char *path = getenv("WHATRAN_JSON");
  if (path == NULL || *path == '\0')
    return;
  FILE *f = fopen(path, "a");
  if (f == NULL) {
    fprintf(stderr, "libwhatran: WHATRAN_JSON=%s cannot be opened\n", path);
    return;
  }
  fprintf(f, "{\"communicator\": %d, \"rank\": %d, \"ranks\": %d, \"windows\": ",
          c->label, c->rank, c->nranks);
  json_string(f, wins);
  fprintf(f, ", \"ran\": ");
  json_string(f, ran);
  fprintf(f, "}\n");
  fclose(f);
}

static void report(void)
{
  pthread_mutex_lock(&lock);
  replays_report();
  int n = 0;
  for (comm_rec *c = comms; c; c = c->next, n++)
    if (!c->done)
      classify(c);
  /* Oldest first; the ranks of one communicator that say the same, once. */
  comm_rec **all = calloc((size_t)n + 1, sizeof *all);
  char (*ran)[2 * TEXT] = calloc((size_t)n + 1, sizeof *ran);
  char (*wins)[TEXT] = calloc((size_t)n + 1, sizeof *wins);
  int *said = calloc((size_t)n + 1, sizeof *said);
  if (all && ran && wins && said) {
    int i = n;
    for (comm_rec *c = comms; c; c = c->next)
      all[--i] = c;
    for (i = 0; i < n; i++) {
      outcomes(all[i], ran[i], sizeof ran[i]);
      windows_text(all[i], wins[i], sizeof wins[i]);
      write_json(all[i], ran[i], wins[i]);
    }
    for (i = 0; i < n; i++) {
      if (said[i])
        continue;
      int *in = calloc((size_t)all[i]->nranks + 1, sizeof *in);
      int members = 0, size = all[i]->nranks;
      for (int j = i; j < n; j++)
        if (!said[j] && all[j]->label == all[i]->label &&
            all[j]->nranks == size && strcmp(ran[j], ran[i]) == 0 &&
            strcmp(wins[j], wins[i]) == 0 && all[j]->rank >= 0 &&
            all[j]->rank < size && in != NULL) {
          said[j] = 1;
          in[all[j]->rank] = 1;
          members++;
        }
      char ranks[256] = "";
      if (in != NULL)
        what_ran_add_ranks(ranks, sizeof ranks, in, size);
      if (all[i]->rank < 0)
        snprintf(ranks, sizeof ranks, "a rank NCCL never said (its"
                                      " communicator was never ready)");
      say("What ran (libwhatran): communicator %d, %d rank%s, %s: %s; %s\n",
          all[i]->label, size, size == 1 ? "" : "s", ranks, ran[i], wins[i]);
      free(in);
    }
  }
  free(all);
  free(ran);
  free(wins);
  free(said);
  pthread_mutex_unlock(&lock);
  if (measuring == 1)
    engine_probe_stop();
}

/* dl_iterate_phdr: is a library named like NCCL's loaded? */
static int nccl_library(struct dl_phdr_info *info, size_t size, void *found)
{
  (void)size;
  const char *slash = strrchr(info->dlpi_name, '/');
  const char *base = slash ? slash + 1 : info->dlpi_name;
  if (strncmp(base, "libnccl", 7) == 0)
    *(int *)found = 1;
  return 0;
}

/* At exit, where no communicator was seen: if NCCL is loaded all the same,
 * the program called it past this library (through a handle of its own,
 * as a Python binding that opens libnccl.so itself does), and says so.
 * Registered at load: it touches no CUDA. */
static void bypassed(void)
{
  int found = 0;
  if (comms == NULL)
    dl_iterate_phdr(nccl_library, &found);
  if (found)
    say("What ran (libwhatran): NCCL is loaded in this process, but no call"
        " to it went through this library: the program reaches NCCL through"
        " a handle of its own (as a Python binding that opens libnccl.so"
        " itself does), and nothing can be said of its communicators\n");
}

__attribute__((constructor)) static void loaded(void) { atexit(bypassed); }

static void start_measuring(void)
{
  pthread_mutex_lock(&lock);
  int first = measuring < 0;
  if (first)
    measuring = 0;
  pthread_mutex_unlock(&lock);
  if (!first)
    return;
  measuring = engine_probe_start();
  atexit(report);
}

/* ------------------------------------------------------ the wrappers */

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id,
                              int rank)
{
  NEXT(ncclCommInitRank);
  start_measuring();
  ncclResult_t res = next_fn(comm, nranks, id, rank);
  if (res == ncclSuccess || res == ncclInProgress) {
    pthread_mutex_lock(&lock);
    int label = label_of(&id);
    pthread_mutex_unlock(&lock);
    note_comm(*comm, label);
  }
  return res;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks,
                                    ncclUniqueId id, int rank,
                                    ncclConfig_t *config)
{
  NEXT(ncclCommInitRankConfig);
  start_measuring();
  ncclResult_t res = next_fn(comm, nranks, id, rank, config);
  if (res == ncclSuccess || res == ncclInProgress) {
    pthread_mutex_lock(&lock);
    int label = label_of(&id);
    pthread_mutex_unlock(&lock);
    note_comm(*comm, label);
  }
  return res;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key,
                           ncclComm_t *newcomm, ncclConfig_t *config)
{
  NEXT(ncclCommSplit);
  ncclResult_t res = next_fn(comm, color, key, newcomm, config);
  if ((res == ncclSuccess || res == ncclInProgress) && *newcomm != NULL) {
    /* A split communicator's label: its parent's and its color. */
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    pthread_mutex_lock(&lock);
    comm_rec *parent = find(comm);
    int base = parent ? parent->label : 0;
    pthread_mutex_unlock(&lock);
    snprintf(id.internal, sizeof id.internal, "split %d %d", base, color);
    pthread_mutex_lock(&lock);
    int label = label_of(&id);
    pthread_mutex_unlock(&lock);
    note_comm(*newcomm, label);
  }
  return res;
}

ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size,
                                    ncclWindow_t *win, int flags)
{
  NEXT(ncclCommWindowRegister);
  ncclResult_t res = next_fn(comm, buff, size, win, flags);
  pthread_mutex_lock(&lock);
  comm_rec *c = find(comm);
  if (res == ncclSuccess && c != NULL && c->nwindows < MAX_WINDOWS && win)
    c->windows[c->nwindows++] =
        (window){.buf = buff, .size = size, .where = win, .live = 1,
                 /* inside a group NCCL writes it at the group's end */
                 .handle = group_depth == 0 ? *win : NULL};
  pthread_mutex_unlock(&lock);
  return res;
}

ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
  NEXT(ncclCommWindowDeregister);
  pthread_mutex_lock(&lock);
  comm_rec *c = find(comm);
  for (int i = 0; c != NULL && i < c->nwindows; i++)
    if (c->windows[i].live && c->windows[i].handle == win && win != NULL) {
      c->windows[i].live = 0;
      c->windows[i].where = NULL; /* the program may reuse its variable */
      break;
    }
  pthread_mutex_unlock(&lock);
  return next_fn(comm, win);
}

ncclResult_t ncclGroupStart(void)
{
  NEXT(ncclGroupStart);
  group_depth++;
  return next_fn();
}

ncclResult_t ncclGroupEnd(void)
{
  NEXT(ncclGroupEnd);
  ncclResult_t res = next_fn();
  if (group_depth > 0 && --group_depth == 0)
    end_group(now());
  return res;
}

static size_t type_bytes(ncclDataType_t t)
{
  switch (t) {
  case ncclInt8: case ncclUint8: return 1;
  case ncclFloat16: case ncclBfloat16: return 2;
  case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
  default: return 8;
  }
}

/* Where a communicator is destroyed, its calls are classified: the handle
 * may be reused by the next one. */
static void retire(ncclComm_t comm)
{
  pthread_mutex_lock(&lock);
  comm_rec *c = find(comm);
  if (c != NULL) {
    classify(c);
    c->done = 1;
  }
  pthread_mutex_unlock(&lock);
}

/* Before the communicator goes: the last chance to ask its rank. */
static void before_destroy(ncclComm_t comm)
{
  pthread_mutex_lock(&lock);
  comm_rec *c = find(comm);
  if (c != NULL)
    settle(c);
  pthread_mutex_unlock(&lock);
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
  NEXT(ncclCommDestroy);
  before_destroy(comm);
  ncclResult_t res = next_fn(comm);
  retire(comm);
  return res;
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
  NEXT(ncclCommAbort);
  before_destroy(comm);
  ncclResult_t res = next_fn(comm);
  retire(comm);
  return res;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream)
{
  NEXT(ncclAllReduce);
  uint64_t t0 = now();
  ncclResult_t res = next_fn(send, recv, count, type, op, comm, stream);
  size_t bytes = count * type_bytes(type);
  note_call(comm, ALLREDUCE, send, bytes, recv, bytes, stream, t0, now());
  return res;
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream)
{
  NEXT(ncclAllGather);
  uint64_t t0 = now();
  ncclResult_t res = next_fn(send, recv, count, type, comm, stream);
  int n = size_of(comm);
  size_t bytes = count * type_bytes(type);
  note_call(comm, ALLGATHER, send, bytes, recv, bytes * (size_t)(n > 0 ? n : 1),
            stream, t0, now());
  return res;
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t count,
                               ncclDataType_t type, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream)
{
  NEXT(ncclReduceScatter);
  uint64_t t0 = now();
  ncclResult_t res = next_fn(send, recv, count, type, op, comm, stream);
  int n = size_of(comm);
  size_t bytes = count * type_bytes(type);
  note_call(comm, REDUCESCATTER, send, bytes * (size_t)(n > 0 ? n : 1), recv,
            bytes, stream, t0, now());
  return res;
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count,
                           ncclDataType_t type, int root, ncclComm_t comm,
                           cudaStream_t stream)
{
  NEXT(ncclBroadcast);
  uint64_t t0 = now();
  ncclResult_t res = next_fn(send, recv, count, type, root, comm, stream);
  size_t bytes = count * type_bytes(type);
  note_call(comm, BROADCAST, send, bytes, recv, bytes, stream, t0, now());
  return res;
}

ncclResult_t ncclReduce(const void *send, void *recv, size_t count,
                        ncclDataType_t type, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream)
{
  NEXT(ncclReduce);
  uint64_t t0 = now();
  ncclResult_t res = next_fn(send, recv, count, type, op, root, comm, stream);
  size_t bytes = count * type_bytes(type);
  note_call(comm, REDUCE, send, bytes, recv, bytes, stream, t0, now());
  return res;
}
