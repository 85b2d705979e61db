/*
 * libgaps.so: where the time of each NCCL collective goes, measured from
 * outside the program that times it, so that two benchmarks (this suite's
 * --bench and nccl-tests) can be compared on the same terms.
 *
 *   LD_PRELOAD=tools/libgaps.so [GAPS_OUT=FILE] PROGRAM ARGS...
 *
 * It wraps ncclAllReduce and ncclAllGather (the host time of each call:
 * NCCL's launch cost) and reads CUPTI's activity records of the kernels and
 * copies the GPU ran with the instruments' reader (instruments/src/
 * engine.c), each tied to the call that launched it: the CUDA call that
 * launched it was made by the same thread during the NCCL call. A CUDA
 * graph replay (cuGraphLaunch) counts as one call of its own. At exit it
 * appends to
 * FILE (stderr without GAPS_OUT) one line per kind of call (collective,
 * element count, communicator and buffers; with GAPS_KEY=size, whether in
 * place instead of the buffers, for a harness that moves its buffers from
 * call to call) with medians over its calls:
 *
 *   host_us    the NCCL call's own time on the host
 *   period_us  from one call's start to the next one's, on the host
 *   gpu_us     from the first kernel or copy of the call to the end of its
 *              last, on the GPU
 *   busy_us    the kernels' and copies' own durations, summed
 *   gap_us     from the end of the previous call's GPU work to the start of
 *              this call's (same thread): the GPU's idle time between calls
 *              (period_us and gap_us also as means: a harness that stops
 *              every few calls shows there, not in the median)
 *   lag_us     from the call's return to its first GPU work: short when the
 *              GPU waits for the host, long when work queues up
 *
 * CUPTI records every driver call while it is loaded, which adds host time
 * to each launch: compare harnesses with it, not with their own times.
 *
 * On one H200 (NCCL 2.30.7, CUDA 13.0, driver 580.159.04) an earlier
 * version, which tied records to calls through CUPTI's external correlation
 * ids, measured the host times but tied no kernel or copy record to a
 * call; the GPU columns then read "not measured", and the last line says
 * how many records were left untied.
 * A value of -1 means no call had one. A measuring tool beside the suite;
 * without a GPU (or CUPTI) it says so and gives host times only. Not part
 * of the lessons. Built by `make -C tools gaps`.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dlsym(RTLD_NEXT) */
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nccl.h>

#include "engine.h"

/* One call: a wrapped NCCL collective or a graph replay. */
typedef struct call {
  uint64_t id;              /* 1, 2, ...: its number */
  int kind;                 /* index into kinds[] */
  uint32_t thread;          /* system thread id */
  uint64_t begin, end;      /* host, CUPTI clock (ns) */
  uint64_t first, last;     /* its GPU work; first == UINT64_MAX: none seen */
  uint64_t busy;            /* sum of its kernels' and copies' durations */
  int kernels, copies;
} call;

typedef struct kind {
  char text[160];
} kind;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static call *calls;
static size_t ncalls, calls_cap;
static kind *kinds;
static size_t nkinds, kinds_cap;
static int cupti_ok, exit_registered;

static int grow(void **array, size_t *cap, size_t used, size_t size)
{
  if (used < *cap)
    return 1;
  size_t more = *cap ? 2 * *cap : 4096;
  void *p = realloc(*array, more * size);
  if (p == NULL)
    return 0;
  *array = p;
  *cap = more;
  return 1;
}

static uint64_t now(void) { return cupti_ok ? engine_probe_now() : 0; }

/* ----------------------------------------------------------- the report */

static int by_thread_then_begin(const void *a, const void *b)
{
  const call *x = a, *y = b;
  if (x->thread != y->thread)
    return x->thread < y->thread ? -1 : 1;
  return (x->begin > y->begin) - (x->begin < y->begin);
}

static int compare_doubles(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
  if (n == 0)
    return -1;
  qsort(v, n, sizeof *v, compare_doubles);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double mean(const double *v, size_t n)
{
  double sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += v[i];
  return n ? sum / n : -1;
}

static int by_launch(const void *a, const void *b)
{
  uint32_t x = ((const engine_piece *)a)->launch,
           y = ((const engine_piece *)b)->launch;
  return (x > y) - (x < y);
}

/* Adds a piece of GPU work to call k. */
static void add_work(call *k, const engine_piece *e)
{
  k->first = e->start < k->first ? e->start : k->first;
  k->last = e->end > k->last ? e->end : k->last;
  k->busy += e->end - e->start;
  *(e->what == ENGINE_KERNEL ? &k->kernels : &k->copies) += 1;
}

static void report(void)
{
  engine_piece *pieces = NULL;
  size_t npieces = cupti_ok && engine_probe_flush()
                       ? engine_probe_pieces(&pieces)
                       : 0;
  pthread_mutex_lock(&lock);
  /* Graph replays become calls of their own kind, one per launch. */
  qsort(pieces, npieces, sizeof *pieces, by_launch);
  int graph_kind = -1;
  for (size_t i = 0; i < npieces; i++) {
    const engine_piece *e = &pieces[i];
    if (!e->graph)
      continue;
    int same = i > 0 && pieces[i - 1].graph && pieces[i - 1].launch == e->launch;
    if (graph_kind < 0 &&
        grow((void **)&kinds, &kinds_cap, nkinds, sizeof *kinds)) {
      snprintf(kinds[nkinds].text, sizeof kinds->text, "cuGraphLaunch");
      graph_kind = (int)nkinds++;
    }
    if (!same && graph_kind >= 0 &&
        grow((void **)&calls, &calls_cap, ncalls, sizeof *calls)) {
      calls[ncalls] = (call){ncalls + 1, graph_kind, e->thread,
                             e->launch_start, e->launch_end, UINT64_MAX,
                             0, 0, 0, 0};
      ncalls++;
    }
    if (graph_kind >= 0 && ncalls > 0)
      add_work(&calls[ncalls - 1], e);
  }
  qsort(calls, ncalls, sizeof *calls, by_thread_then_begin);
  /* Other work: the call of its launching thread whose host time holds
   * the launch (calls sorted by thread, then start: a binary search). */
  size_t unowned = 0;
  for (size_t i = 0; i < npieces; i++) {
    const engine_piece *e = &pieces[i];
    if (e->graph)
      continue;
    long lo = 0, hi = (long)ncalls - 1, found = -1;
    while (lo <= hi) {
      long mid = (lo + hi) / 2;
      const call *k = &calls[mid];
      if (k->thread < e->thread ||
          (k->thread == e->thread && k->begin <= e->launch_start)) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    call *k = found >= 0 ? &calls[found] : NULL;
    if (k != NULL && k->thread == e->thread && k->kind != graph_kind &&
        e->launch_start <= k->end)
      add_work(k, e);
    else
      unowned++;
  }

  FILE *out = stderr;
  const char *path = getenv("GAPS_OUT");
  if (path && *path && (out = fopen(path, "a")) == NULL) {
    perror(path);
    out = stderr;
  }
  double *v[6];
  for (int j = 0; j < 6; j++)
    v[j] = calloc(ncalls ? ncalls : 1, sizeof(double));
  for (size_t k = 0; k < nkinds && v[5]; k++) {
    size_t n[6] = {0};
    double kernels = 0, copies = 0;
    for (size_t i = 0; i < ncalls; i++) {
      const call *c = &calls[i];
      if (c->kind != (int)k)
        continue;
      v[0][n[0]++] = (c->end - c->begin) / 1e3;
      if (i + 1 < ncalls && calls[i + 1].thread == c->thread &&
          calls[i + 1].kind == c->kind)
        v[1][n[1]++] = (calls[i + 1].begin - c->begin) / 1e3;
      if (c->first == UINT64_MAX)
        continue;
      kernels += c->kernels;
      copies += c->copies;
      v[2][n[2]++] = (c->last - c->first) / 1e3;
      v[3][n[3]++] = c->busy / 1e3;
      v[5][n[5]++] = ((double)c->first - (double)c->end) / 1e3;
      /* the previous call of the same thread that had GPU work */
      for (size_t p = i; p-- > 0 && calls[p].thread == c->thread;)
        if (calls[p].first != UINT64_MAX) {
          if (calls[p].kind == c->kind)
            v[4][n[4]++] = ((double)c->first - (double)calls[p].last) / 1e3;
          break;
        }
    }
    size_t with_work = n[2];
    fprintf(out, "gaps: %s: calls %zu (with GPU work %zu): host_us %.2f"
                 " period_us %.2f (mean %.2f)",
            kinds[k].text, n[0], with_work, median(v[0], n[0]),
            median(v[1], n[1]), mean(v[1], n[1]));
    if (with_work == 0)
      fprintf(out, "; GPU side not measured\n");
    else
      fprintf(out,
              " gpu_us %.2f busy_us %.2f gap_us %.2f (mean %.2f) lag_us %.2f"
              " kernels/call %.2f copies/call %.2f\n",
              median(v[2], n[2]), median(v[3], n[3]), median(v[4], n[4]),
              mean(v[4], n[4]), median(v[5], n[5]), kernels / with_work,
              copies / with_work);
  }
  fprintf(out, "gaps: %zu kernels or copies tied to no call; %zu records\n",
          unowned, npieces);
  for (int j = 0; j < 6; j++)
    free(v[j]);
  if (out != stderr)
    fclose(out);
  pthread_mutex_unlock(&lock);
  free(pieces);
}

/* ------------------------------------------------------ the NCCL calls */

static int kind_of(const char *name, size_t count, const void *send,
                   const void *recv, ncclComm_t comm)
{
  char text[160];
  const char *key = getenv("GAPS_KEY");
  if (key && strcmp(key, "size") == 0)
    snprintf(text, sizeof text, "%s count %zu comm %p %s", name, count,
             (void *)comm, send == recv ? "in place" : "out of place");
  else
    snprintf(text, sizeof text, "%s count %zu comm %p send %p recv %p", name,
             count, (void *)comm, send, recv);
  for (size_t i = 0; i < nkinds; i++)
    if (strcmp(kinds[i].text, text) == 0)
      return (int)i;
  if (!grow((void **)&kinds, &kinds_cap, nkinds, sizeof *kinds))
    return -1;
  memcpy(kinds[nkinds].text, text, sizeof text);
  return (int)nkinds++;
}

/* Before a wrapped call: its number, 0 if it could not be kept. */
static uint64_t call_begin(const char *name, size_t count, const void *send,
                           const void *recv, ncclComm_t comm)
{
  pthread_mutex_lock(&lock);
  if (!exit_registered) { /* after CUDA's own exit handlers: runs before them */
    /* CUPTI from the first NCCL call on: not every process of a job
     * (mpirun, a shell) makes one, and only those should say anything. */
    cupti_ok = engine_probe_start();
    exit_registered = atexit(report) == 0;
    if (!cupti_ok)
      fprintf(stderr, "gaps: CUPTI could not be set up: no GPU work is"
                      " measured, only the NCCL calls' host times\n");
  }
  uint64_t begin = now(), id = 0;
  uint32_t thread = engine_probe_thread();
  int k = kind_of(name, count, send, recv, comm);
  if (k >= 0 && grow((void **)&calls, &calls_cap, ncalls, sizeof *calls)) {
    id = ncalls + 1;
    calls[ncalls++] = (call){id, k, thread, begin, 0, UINT64_MAX, 0, 0, 0, 0};
  }
  pthread_mutex_unlock(&lock);
  return id;
}

static void call_end(uint64_t id)
{
  uint64_t end = now();
  pthread_mutex_lock(&lock);
  if (id)
    calls[id - 1].end = end;
  pthread_mutex_unlock(&lock);
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream)
{
  static ncclResult_t (*real)(const void *, void *, size_t, ncclDataType_t,
                              ncclRedOp_t, ncclComm_t, cudaStream_t);
  if (real == NULL)
    *(void **)&real = dlsym(RTLD_NEXT, "ncclAllReduce");
  uint64_t id = call_begin("AllReduce", count, send, recv, comm);
  ncclResult_t res = real(send, recv, count, type, op, comm, stream);
  call_end(id);
  return res;
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream)
{
  static ncclResult_t (*real)(const void *, void *, size_t, ncclDataType_t,
                              ncclComm_t, cudaStream_t);
  if (real == NULL)
    *(void **)&real = dlsym(RTLD_NEXT, "ncclAllGather");
  uint64_t id = call_begin("AllGather", count, send, recv, comm);
  ncclResult_t res = real(send, recv, count, type, comm, stream);
  call_end(id);
  return res;
}
