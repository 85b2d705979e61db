/* Over 350 lines: CUPTI's records stay private to this file (its callbacks
 * fill them, the probe reads them), with the stand-in built without CUPTI. */
#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"

#if HAVE_CUPTI
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cupti.h>

/* CUPTI hands buffers of records to callbacks that take no user pointer, so
 * what they collect lives here, behind a lock (ranks may be threads).
 * Kernels and copies are tied to the thread that launched them through the
 * API records' correlation ids: ranks that are threads sharing one GPU each
 * count only their own work. */
enum work_kind { KERNEL, DEVICE_COPY, HOST_COPY };

typedef struct record {
  uint32_t device;
  uint64_t start, end;
  uint32_t correlation;
  enum work_kind kind;
  int name; /* kernels: index into names[], else -1 */
} record;

typedef struct launch {
  uint32_t correlation;
  uint32_t thread;     /* kernel thread id (CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) */
  uint64_t start, end; /* the API call, on the host */
  int graph;           /* a graph launch (cuGraphLaunch, cudaGraphLaunch) */
} launch;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static record *records;
static size_t nrecords, capacity;
static launch *launches;
static size_t nlaunches, launch_capacity;
static char (*names)[64]; /* kernel names seen, each once */
static size_t nnames, names_capacity;
static size_t sorted_launches; /* launches[0..sorted_launches) are sorted */
static int users;  /* nesting count of engine_probe_start */
static int broken; /* CUPTI failed once: stop trying */

#define BUFFER_SIZE (1 << 20)

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size,
                                      size_t *max_records)
{
  *buffer = aligned_alloc(8, BUFFER_SIZE);
  *size = *buffer ? BUFFER_SIZE : 0;
  *max_records = 0; /* as many as fit */
}

/* Makes room for one more element in a growing array; 0 if out of memory
 * (a lost record can only make a count low). */
static int grow(void **array, size_t *capacity, size_t used, size_t size)
{
  if (used < *capacity)
    return 1;
  size_t more = *capacity ? 2 * *capacity : 4096;
  void *grown = realloc(*array, more * size);
  if (grown == NULL)
    return 0;
  *array = grown;
  *capacity = more;
  return 1;
}

static void keep(uint32_t device, uint64_t start, uint64_t end,
                 uint32_t correlation, enum work_kind kind, int name)
{
  if (grow((void **)&records, &capacity, nrecords, sizeof *records))
    records[nrecords++] = (record){device, start, end, correlation, kind, name};
}

/* The index of a kernel's name in names[], added if new; -1 if out of
 * memory. CUPTI gives the mangled C++ name ("_Z36ncclSymkDevKernel_..."):
 * the name proper is the <length><name> that follows "_Z". */
static int name_index(const char *mangled)
{
  char name[64];
  const char *p = mangled ? mangled : "?";
  size_t len = strlen(p);
  if (p[0] == '_' && p[1] == 'Z') {
    char *end;
    unsigned long n = strtoul(p + 2, &end, 10);
    if (end != p + 2 && n > 0 && n <= strlen(end)) {
      p = end;
      len = n;
    }
  }
  if (len >= sizeof name)
    len = sizeof name - 1;
  memcpy(name, p, len);
  name[len] = '\0';
  for (size_t i = 0; i < nnames; i++)
    if (strcmp(names[i], name) == 0)
      return (int)i;
  if (!grow((void **)&names, &names_capacity, nnames, sizeof *names))
    return -1;
  memcpy(names[nnames], name, sizeof name);
  return (int)nnames++;
}

static enum work_kind copy_kind(uint8_t kind)
{
  return kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOD ||
                 kind == CUPTI_ACTIVITY_MEMCPY_KIND_PTOP
             ? DEVICE_COPY
             : HOST_COPY;
}

static void keep_launch(const CUpti_ActivityAPI *a)
{
  int graph = a->kind == CUPTI_ACTIVITY_KIND_DRIVER
                  ? a->cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch ||
                        a->cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz
                  : a->cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 ||
                        a->cbid ==
                            CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000;
  if (grow((void **)&launches, &launch_capacity, nlaunches, sizeof *launches))
    launches[nlaunches++] =
        (launch){a->correlationId, a->threadId, a->start, a->end, graph};
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream,
                                      uint8_t *buffer, size_t size,
                                      size_t valid)
{
  (void)ctx;
  (void)stream;
  (void)size;
  CUpti_Activity *r = NULL;
  pthread_mutex_lock(&lock);
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
      keep(k->deviceId, k->start, k->end, k->correlationId, KERNEL,
           name_index(k->name));
    } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)r;
      keep(m->deviceId, m->start, m->end, m->correlationId,
           copy_kind(m->copyKind), -1);
    } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY2) {
      const CUpti_ActivityMemcpyPtoP4 *m = (const CUpti_ActivityMemcpyPtoP4 *)r;
      keep(m->deviceId, m->start, m->end, m->correlationId, DEVICE_COPY, -1);
    } else if (r->kind == CUPTI_ACTIVITY_KIND_DRIVER ||
               r->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
      keep_launch((const CUpti_ActivityAPI *)r);
    }
  }
  pthread_mutex_unlock(&lock);
  free(buffer);
}

static const CUpti_ActivityKind kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_RUNTIME};
#define NKINDS (sizeof kinds / sizeof *kinds)

static int failed(CUptiResult res, const char *call)
{
  if (res == CUPTI_SUCCESS)
    return 0;
  const char *text = "?";
  cuptiGetResultString(res, &text);
  print_error("CUPTI: %s failed: %s; what ran is not measured\n", call, text);
  broken = 1;
  return 1;
}

int engine_probe_start(void)
{
  pthread_mutex_lock(&lock);
  int ok = !broken;
  if (ok && users == 0) {
    /* Each CUPTI call is watched (checks.h's WATCHED), like every call. */
    static int callbacks_registered;
    CUptiResult res = CUPTI_SUCCESS;
    if (!callbacks_registered) {
      WATCHED(res, cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM));
      ok = !failed(res, "cuptiSetThreadIdType");
    }
    if (ok && !callbacks_registered) {
      WATCHED(res, cuptiActivityRegisterCallbacks(buffer_requested,
                                                  buffer_completed));
      ok = !failed(res, "cuptiActivityRegisterCallbacks");
    }
    callbacks_registered = ok;
    for (size_t i = 0; ok && i < NKINDS; i++) {
      WATCHED(res, cuptiActivityEnable(kinds[i]));
      ok = !failed(res, "cuptiActivityEnable");
    }
  }
  if (ok)
    users++;
  pthread_mutex_unlock(&lock);
  return ok;
}

void engine_probe_stop(void)
{
  pthread_mutex_lock(&lock);
  CUptiResult res = CUPTI_SUCCESS;
  if (users > 0 && --users == 0) {
    for (size_t i = 0; i < NKINDS; i++)
      WATCHED(res, cuptiActivityDisable(kinds[i]));
    /* No one collects now: what was recorded is read by no one, and kept
     * it would make every later collection scan it again. */
    nrecords = nlaunches = sorted_launches = 0;
  }
  (void)res; /* a kind left enabled only costs records no one reads */
  pthread_mutex_unlock(&lock);
}

const char *engine_probe_unavailable(void)
{
  return "CUPTI failed (see its message above)";
}

uint64_t engine_probe_now(void)
{
  uint64_t t = 0;
  CUptiResult res;
  WATCHED(res, cuptiGetTimestamp(&t));
  return failed(res, "cuptiGetTimestamp") ? 0 : t;
}

/* The API call with this correlation id, or NULL: launches[] sorted by
 * correlation id first (sort_launches), since there may be many. */
static int by_correlation(const void *x, const void *y)
{
  uint32_t a = ((const launch *)x)->correlation, b = ((const launch *)y)->correlation;
  return (a > b) - (a < b);
}
static void sort_launches(void)
{
  if (sorted_launches != nlaunches)
    qsort(launches, nlaunches, sizeof *launches, by_correlation);
  sorted_launches = nlaunches;
}
static const launch *launch_of(uint32_t correlation)
{
  launch key = {.correlation = correlation};
  return bsearch(&key, launches, sorted_launches, sizeof *launches,
                 by_correlation);
}

/* Adds record r to *w. */
static void count(const record *r, engine_work *w)
{
  engine_piece p = {.what = r->kind == KERNEL        ? ENGINE_KERNEL
                            : r->kind == DEVICE_COPY ? ENGINE_DEVICE_COPY
                                                     : ENGINE_HOST_COPY,
                    .name = r->name >= 0 ? names[r->name] : "?"};
  engine_work_add(w, &p);
}

int engine_probe_flush(void)
{
  CUptiResult res;
  WATCHED(res, cuptiActivityFlushAll(0)); /* runs buffer_completed */
  return !failed(res, "cuptiActivityFlushAll");
}

uint32_t engine_probe_thread(void) { return (uint32_t)syscall(SYS_gettid); }

int engine_probe_collect(int device, uint64_t t0, uint64_t t1, engine_work *w)
{
  memset(w, 0, sizeof *w);
  /* Without a time span or the records flushed, nothing was measured: an
   * empty count would read as "no kernel and no copy". */
  if (t0 == 0 || t1 == 0 || !engine_probe_flush())
    return 0;
  uint32_t me = engine_probe_thread();
  pthread_mutex_lock(&lock);
  sort_launches();
  for (size_t i = 0; i < nrecords; i++) {
    const record *r = &records[i];
    const launch *l = launch_of(r->correlation);
    if (r->device == (uint32_t)device && r->start >= t0 && r->start <= t1 &&
        l != NULL && l->thread == me)
      count(r, w);
  }
  pthread_mutex_unlock(&lock);
  return 1;
}

size_t engine_probe_pieces(engine_piece **out)
{
  *out = NULL;
  pthread_mutex_lock(&lock);
  sort_launches();
  engine_piece *p = nrecords ? calloc(nrecords, sizeof *p) : NULL;
  size_t n = 0;
  for (size_t i = 0; p != NULL && i < nrecords; i++) {
    const record *r = &records[i];
    const launch *l = launch_of(r->correlation);
    p[n++] = (engine_piece){
        .what = r->kind == KERNEL        ? ENGINE_KERNEL
                : r->kind == DEVICE_COPY ? ENGINE_DEVICE_COPY
                                         : ENGINE_HOST_COPY,
        .name = r->kind == KERNEL && r->name >= 0 ? names[r->name] : "?",
        .device = r->device,
        .start = r->start,
        .end = r->end,
        .thread = l ? l->thread : 0,
        .launch = r->correlation,
        .launch_start = l ? l->start : 0,
        .launch_end = l ? l->end : 0,
        .graph = l ? l->graph : 0};
  }
  pthread_mutex_unlock(&lock);
  *out = p;
  return n;
}

#else /* built without CUPTI */

int engine_probe_start(void) { return 0; }
void engine_probe_stop(void) {}
const char *engine_probe_unavailable(void)
{
  return "this build has no CUPTI (HAVE_CUPTI=0)";
}
uint64_t engine_probe_now(void) { return 0; }
int engine_probe_flush(void) { return 0; }
uint32_t engine_probe_thread(void) { return 0; }
int engine_probe_collect(int device, uint64_t t0, uint64_t t1, engine_work *w)
{
  (void)device;
  (void)t0;
  (void)t1;
  memset(w, 0, sizeof *w);
  return 0;
}
size_t engine_probe_pieces(engine_piece **out)
{
  *out = NULL;
  return 0;
}
#endif

void engine_work_add(engine_work *w, const engine_piece *p)
{
  if (p->what == ENGINE_DEVICE_COPY)
    w->copies++;
  else if (p->what == ENGINE_HOST_COPY)
    w->host_copies++;
  else {
    w->kernels++;
    int seen = 0;
    for (int n = 0; n < w->nnames && !seen; n++)
      seen = strcmp(w->names[n], p->name) == 0;
    if (!seen && w->nnames < ENGINE_MAX_NAMES)
      snprintf(w->names[w->nnames++], sizeof w->names[0], "%s", p->name);
  }
}
