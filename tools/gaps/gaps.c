/*
 * libgaps.so: where the time of each NCCL collective goes, measured from
 * outside the program that times it, so that two benchmarks (this suite's
 * --bench and nccl-tests) can be compared on the same terms.
 *
 *   LD_PRELOAD=tools/libgaps.so [GAPS_OUT=FILE] PROGRAM ARGS...
 *
 * It wraps ncclAllReduce and ncclAllGather (the host time of each call:
 * NCCL's launch cost) and reads CUPTI's activity records of the kernels and
 * copies the GPU ran, each tied to the call that launched it: the wrapper
 * pushes an external correlation id (the call's number) around the call,
 * and CUPTI ties it to every driver call made inside. A CUDA graph replay
 * (cuGraphLaunch) counts as one call of its own. At exit it appends to
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
 * On one H200 (NCCL 2.30.7, CUDA 13.0, driver 580.159.04) the host times
 * were measured, but no kernel or copy record was tied to a call: the GPU
 * columns then read "not measured", and the last line says how many
 * records were left untied.
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
#include <sys/syscall.h>
#include <unistd.h>

#include <cupti.h>
#include <nccl.h>

/* One call: a wrapped NCCL collective or a graph replay. */
typedef struct call {
  uint64_t id;              /* 1, 2, ...: the external correlation id */
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

/* A driver-API record (to tie work to a call) or a piece of GPU work. */
typedef struct record {
  uint32_t correlation, thread;
  uint64_t start, end;
  int work; /* 0: API call, 1: kernel, 2: copy, 3: a graph launch,
               4: an external correlation (start holds the call's id) */
} record;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static call *calls;
static size_t ncalls, calls_cap;
static kind *kinds;
static size_t nkinds, kinds_cap;
static record *records;
static size_t nrecords, records_cap;
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

static uint64_t now(void)
{
  uint64_t t = 0;
  cuptiGetTimestamp(&t);
  return t;
}

/* ------------------------------------------------------- CUPTI records */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size,
                                      size_t *max_records)
{
  *buffer = aligned_alloc(8, 8 << 20);
  *size = *buffer ? 8 << 20 : 0;
  *max_records = 0;
}

static void keep(record r)
{
  if (grow((void **)&records, &records_cap, nrecords, sizeof *records))
    records[nrecords++] = r;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream,
                                      uint8_t *buffer, size_t size,
                                      size_t valid)
{
  (void)ctx;
  (void)stream;
  (void)size;
  CUpti_Activity *a = NULL;
  pthread_mutex_lock(&lock);
  while (cuptiActivityGetNextRecord(buffer, valid, &a) == CUPTI_SUCCESS) {
    if (a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const CUpti_ActivityKernel10 *k = (const void *)a;
      keep((record){k->correlationId, 0, k->start, k->end, 1});
    } else if (a->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const CUpti_ActivityMemcpy6 *m = (const void *)a;
      keep((record){m->correlationId, 0, m->start, m->end, 2});
    } else if (a->kind == CUPTI_ACTIVITY_KIND_MEMCPY2) {
      const CUpti_ActivityMemcpyPtoP4 *m = (const void *)a;
      keep((record){m->correlationId, 0, m->start, m->end, 2});
    } else if (a->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
      const CUpti_ActivityExternalCorrelation *e = (const void *)a;
      if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
        keep((record){e->correlationId, 0, e->externalId, 0, 4});
    } else if (a->kind == CUPTI_ACTIVITY_KIND_DRIVER) {
      const CUpti_ActivityAPI *d = (const void *)a;
      int graph = d->cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch ||
                  d->cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
      keep((record){d->correlationId, d->threadId, d->start, d->end,
                    graph ? 3 : 0});
    }
  }
  pthread_mutex_unlock(&lock);
  free(buffer);
}

__attribute__((constructor)) static void start(void)
{
  static const CUpti_ActivityKind wanted[] = {
      CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
      CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_DRIVER,
      CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};
  int ok = cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) ==
               CUPTI_SUCCESS &&
           cuptiActivityRegisterCallbacks(buffer_requested,
                                          buffer_completed) == CUPTI_SUCCESS;
  for (size_t i = 0; ok && i < sizeof wanted / sizeof *wanted; i++)
    ok = cuptiActivityEnable(wanted[i]) == CUPTI_SUCCESS;
  cupti_ok = ok; /* said at the first NCCL call: not every process of a
                    job (mpirun, a shell) makes one */
}

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

static void report(void)
{
  if (cupti_ok)
    cuptiActivityFlushAll(1);
  pthread_mutex_lock(&lock);
  /* Graph replays become calls of their own kind. */
  int graph_kind = -1;
  for (size_t i = 0; i < nrecords; i++) {
    if (records[i].work != 3)
      continue;
    if (graph_kind < 0 &&
        grow((void **)&kinds, &kinds_cap, nkinds, sizeof *kinds)) {
      snprintf(kinds[nkinds].text, sizeof kinds->text, "cuGraphLaunch");
      graph_kind = (int)nkinds++;
    }
    if (graph_kind >= 0 &&
        grow((void **)&calls, &calls_cap, ncalls, sizeof *calls)) {
      calls[ncalls] = (call){ncalls + 1, graph_kind, records[i].thread,
                             records[i].start, records[i].end, UINT64_MAX,
                             0, 0, 0, 0};
      records[i].start = ++ncalls; /* its kernels belong to this call */
    }
  }
  size_t nids = ncalls;
  qsort(calls, ncalls, sizeof *calls, by_thread_then_begin);
  long *at = calloc(nids + 1, sizeof *at); /* call id -> index + 1 */
  for (size_t i = 0; at && i < ncalls; i++)
    at[calls[i].id] = (long)i + 1;
  /* correlation id -> call index + 1: the external correlation records
   * name the call of each driver call made inside a wrapped one; a graph
   * launch is its own call. */
  uint32_t max_corr = 0;
  for (size_t i = 0; i < nrecords; i++)
    if (records[i].correlation > max_corr)
      max_corr = records[i].correlation;
  long *owner = calloc((size_t)max_corr + 1, sizeof *owner);
  size_t unowned = 0;
  for (size_t i = 0; owner && at && i < nrecords; i++)
    if ((records[i].work == 3 || records[i].work == 4) &&
        records[i].start >= 1 && records[i].start <= nids)
      owner[records[i].correlation] = at[records[i].start];
  if (at == NULL)
    free(owner), owner = NULL;
  free(at);
  for (size_t i = 0; owner && i < nrecords; i++) {
    const record *r = &records[i];
    if (r->work != 1 && r->work != 2)
      continue;
    long c = owner[r->correlation] - 1;
    if (c < 0) {
      unowned++;
      continue;
    }
    call *k = &calls[c];
    k->first = r->start < k->first ? r->start : k->first;
    k->last = r->end > k->last ? r->end : k->last;
    k->busy += r->end - r->start;
    *(r->work == 1 ? &k->kernels : &k->copies) += 1;
  }
  free(owner);

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
          unowned, nrecords);
  for (int j = 0; j < 6; j++)
    free(v[j]);
  if (out != stderr)
    fclose(out);
  pthread_mutex_unlock(&lock);
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

/* Before a wrapped call: its number (its external correlation id), pushed
 * for the calling thread; 0 if it could not be kept. */
static uint64_t call_begin(const char *name, size_t count, const void *send,
                           const void *recv, ncclComm_t comm)
{
  uint64_t begin = now(), id = 0;
  uint32_t thread = (uint32_t)syscall(SYS_gettid);
  pthread_mutex_lock(&lock);
  if (!exit_registered) { /* after CUDA's own exit handlers: runs before them */
    exit_registered = atexit(report) == 0;
    if (!cupti_ok)
      fprintf(stderr, "gaps: CUPTI could not be set up: no GPU work is"
                      " measured, only the NCCL calls' host times\n");
  }
  int k = kind_of(name, count, send, recv, comm);
  if (k >= 0 && grow((void **)&calls, &calls_cap, ncalls, sizeof *calls)) {
    id = ncalls + 1;
    calls[ncalls++] = (call){id, k, thread, begin, 0, UINT64_MAX, 0, 0, 0, 0};
  }
  pthread_mutex_unlock(&lock);
  if (id && cupti_ok)
    cuptiActivityPushExternalCorrelationId(
        CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
  return id;
}

static void call_end(uint64_t id)
{
  uint64_t last = 0;
  if (id && cupti_ok)
    cuptiActivityPopExternalCorrelationId(
        CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
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
