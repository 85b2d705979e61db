/* ncclsim: the CUPTI activity calls the instruments make (see sim.h), so
 * that their HAVE_CUPTI=1 code runs without a GPU (only in the suite's
 * builds that ask for it: tests/Makefile's simcupti-* variants).
 *
 * Records follow from what the simulated work did when it ran (queues.c):
 * an API record (RUNTIME) for each call that queued work, by the calling
 * thread; then, when the work runs, a memcpy record for a copy and, for a
 * collective, what NCCL runs for it, named as the simulated version names
 * it. Recorded on one H200 with NCCL 2.30.7 (docs/what-ran, docs/facts):
 *   one rank                 a local copy, no kernel (in place: nothing)
 *   AllReduce in windows     ncclSymkDevKernel_AllReduce_AGxLL_R_sum_f32 at
 *                            4 KiB, ..._RSxLD_AGxST_sum_f32 at 4 MiB (which
 *                            one between is the simulation's choice: the
 *                            first below 64 KiB)
 *   AllGather in windows     CTAPolicy ZERO: the copy engines, no kernel,
 *                            3n - 2 copies per rank on n ranks (2 to 8
 *                            ranks; docs/what-ran, and 4 and 10 copies in
 *                            docs/facts): here one local copy of the rank's
 *                            part and, per peer, its part and two copies of
 *                            8 bytes (their sizes are the simulation's:
 *                            not recorded); else
 *                            ncclSymkDevKernel_AllGather_ST
 *   no window                ncclDevKernel_AllReduce_Sum_f32_RING_LL,
 *                            ncclDevKernel_AllGather_RING_LL; from 2.31
 *                            ncclDevKernel_AllReduce_f32_RING (the 2.32.3
 *                            library's symbol) and, by the same pattern
 *                            (not recorded), ncclDevKernel_AllGather_RING
 * A buffer counts as in a window when a symmetric window of the
 * communicator holds it. Which buffers must be: as recorded on one H100
 * with NCCL 2.30.7 at 2 ranks (docs/facts/nccl-2.30.7-2ranks-h100.tsv,
 * window.*): an AllReduce of 1 MiB ran RSxLD_AGxST with both buffers in
 * windows and AGxLL_R with only one (either), a regular kernel with none;
 * a copy-engine AllGather (CTAPolicy ZERO) ran on the copy engines with
 * only its receive buffer in a window, a regular kernel with only its send
 * buffer; the symmetric AllGather kernel is given both (not recorded with
 * one). The simulation plays this for every version. CUPTI fails as asked:
 *   SIM_CUPTI_FAIL=CALL:RANK[,...]  that CUPTI call fails on that rank
 *                        (cuptiActivityEnable, cuptiGetTimestamp,
 *                        cuptiActivityFlushAll, ...), as when a profiler
 *                        holds CUPTI in that rank's process
 */
#include "sim.h"

#include <cupti.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* One record as the simulation lays them in a buffer: fixed size. */
typedef union sim_record {
  CUpti_Activity base;
  CUpti_ActivityKernel10 kernel;
  CUpti_ActivityMemcpy6 copy;
  CUpti_ActivityAPI api;
} sim_record;

static pthread_mutex_t cupti_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned enabled;            /* bit per CUpti_ActivityKind below 32 */
static sim_record *pending;         /* recorded, not yet flushed */
static size_t npending, pending_capacity;
static uint32_t next_correlation = 1;
static CUpti_BuffersCallbackRequestFunc requested;
static CUpti_BuffersCallbackCompleteFunc completed;

static uint64_t now_ns(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Does SIM_CUPTI_FAIL name this call on the calling rank? */
static int cupti_fails(const char *call)
{
  const char *spec = getenv("SIM_CUPTI_FAIL");
  for (const char *item = spec; item != NULL && *item;) {
    size_t len = strcspn(item, ",");
    const char *colon = memchr(item, ':', len);
    if (colon != NULL && (size_t)(colon - item) == strlen(call) &&
        strncmp(item, call, strlen(call)) == 0 && atoi(colon + 1) == sim_rank())
      return 1;
    item += len + (item[len] == ',');
  }
  return 0;
}
#define FAIL_IF_ASKED(call)                                                    \
  do {                                                                         \
    if (cupti_fails(call))                                                     \
      return CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;                              \
  } while (0)

static int is_enabled(CUpti_ActivityKind kind)
{
  return (unsigned)kind < 32 &&
         (__atomic_load_n(&enabled, __ATOMIC_ACQUIRE) & (1u << kind));
}

static void keep(const sim_record *r)
{
  pthread_mutex_lock(&cupti_lock);
  if (npending == pending_capacity) {
    size_t more = pending_capacity ? 2 * pending_capacity : 256;
    sim_record *grown = realloc(pending, more * sizeof *grown);
    if (grown == NULL) { /* a lost record can only make a count low */
      pthread_mutex_unlock(&cupti_lock);
      return;
    }
    pending = grown;
    pending_capacity = more;
  }
  pending[npending++] = *r;
  pthread_mutex_unlock(&cupti_lock);
}

/* ------------------------------------------------ the simulation's hooks */

static _Thread_local int in_graph_launch;
static _Thread_local uint32_t graph_correlation;

void cupti_graph_launch(int begin)
{
  in_graph_launch = begin;
  graph_correlation = 0;
}

uint32_t cupti_launch(void)
{
  if (!is_enabled(CUPTI_ACTIVITY_KIND_RUNTIME))
    return 0;
  if (in_graph_launch && graph_correlation != 0)
    return graph_correlation;
  sim_record r;
  memset(&r, 0, sizeof r);
  r.api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  if (in_graph_launch)
    r.api.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000;
  r.api.correlationId = __atomic_fetch_add(&next_correlation, 1,
                                           __ATOMIC_RELAXED);
  r.api.threadId = (uint32_t)syscall(SYS_gettid);
  if (launched_by_nccl_thread) /* nonblocking.c: a thread of NCCL's */
    r.api.threadId |= 0x40000000u;
  r.api.start = r.api.end = now_ns();
  keep(&r);
  if (in_graph_launch)
    graph_correlation = r.api.correlationId;
  return r.api.correlationId;
}

static void kernel(uint32_t correlation, int device, const char *name)
{
  if (correlation == 0 || !is_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL))
    return;
  sim_record r;
  memset(&r, 0, sizeof r);
  r.kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  r.kernel.name = name;
  r.kernel.deviceId = (uint32_t)device;
  r.kernel.correlationId = correlation;
  r.kernel.start = now_ns();
  r.kernel.end = r.kernel.start + 1000;
  keep(&r);
}

/* A program's own kernel (device.c), when it runs. */
void cupti_kernel(uint32_t correlation, int device, const char *name)
{
  kernel(correlation, device, name);
}

void cupti_copy(uint32_t correlation, int device, int copy_kind, size_t bytes)
{
  if (correlation == 0 || !is_enabled(CUPTI_ACTIVITY_KIND_MEMCPY))
    return;
  sim_record r;
  memset(&r, 0, sizeof r);
  r.copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  r.copy.copyKind = (uint8_t)copy_kind;
  r.copy.bytes = bytes;
  r.copy.deviceId = (uint32_t)device;
  r.copy.correlationId = correlation;
  r.copy.start = now_ns();
  r.copy.end = r.copy.start + 1000;
  keep(&r);
}

/* The kernel names as CUPTI gives them, mangled (a record keeps a pointer
 * to its name). */
static const char *const names[] = {
    "_Z43ncclSymkDevKernel_AllReduce_AGxLL_R_sum_f32v",
    "_Z47ncclSymkDevKernel_AllReduce_RSxLD_AGxST_sum_f32v",
    "_Z30ncclSymkDevKernel_AllGather_STv",
    "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LLv",
    "_Z31ncclDevKernel_AllGather_RING_LLv",
    "_Z32ncclDevKernel_AllReduce_f32_RINGv",
    "_Z28ncclDevKernel_AllGather_RINGv",
};
enum { AR_SMALL, AR_LARGE, AG_SYM, AR_RING_228, AG_RING_228, AR_RING_231,
       AG_RING_231 };

void cupti_collective(uint32_t correlation, const sim_node *node)
{
  ncclComm_t comm = node->comm;
  const size_t bytes = node->count * sim_element_size(node);
  const size_t out = node->allgather ? bytes * (size_t)comm->nranks : bytes;
  if (comm->nranks == 1) { /* in place: nothing (2.30.7 src/device/onerank.cu) */
    if (node->send != node->recv)
      cupti_copy(correlation, comm->device, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD,
                 bytes);
    return;
  }
  const int send_in = in_symmetric_window(comm, node->send, bytes);
  const int recv_in = in_symmetric_window(comm, node->recv, out);
  const int ce = node->allgather && (comm->cta_policy & NCCL_CTA_POLICY_ZERO);
  int v231 = simulated_version() >= NCCL_VERSION(2, 31, 0);
  if (ce ? !recv_in : node->allgather ? !(send_in && recv_in)
                                      : !(send_in || recv_in))
    kernel(correlation, comm->device,
           names[node->allgather ? (v231 ? AG_RING_231 : AG_RING_228)
                                 : (v231 ? AR_RING_231 : AR_RING_228)]);
  else if (!node->allgather)
    kernel(correlation, comm->device,
           names[bytes < 64 * 1024 || !(send_in && recv_in) ? AR_SMALL
                                                             : AR_LARGE]);
  else if (ce)
    for (int r = 0; r < comm->nranks; r++)
      for (int c = 0; c < (r == comm->rank ? 1 : 3); c++)
        cupti_copy(correlation, comm->device,
                   r == comm->rank ? CUPTI_ACTIVITY_MEMCPY_KIND_DTOD
                                   : CUPTI_ACTIVITY_MEMCPY_KIND_PTOP,
                   c == 0 ? bytes : 8);
  else
    kernel(correlation, comm->device, names[AG_SYM]);
}

/* ---------------------------------------------------------------- CUPTI */

CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType type)
{
  FAIL_IF_ASKED("cuptiSetThreadIdType");
  return type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM
             ? CUPTI_SUCCESS
             : CUPTI_ERROR_NOT_SUPPORTED;
}

CUptiResult cuptiActivityRegisterCallbacks(
    CUpti_BuffersCallbackRequestFunc funcBufferRequested,
    CUpti_BuffersCallbackCompleteFunc funcBufferCompleted)
{
  FAIL_IF_ASKED("cuptiActivityRegisterCallbacks");
  if (funcBufferRequested == NULL || funcBufferCompleted == NULL)
    return CUPTI_ERROR_INVALID_PARAMETER;
  requested = funcBufferRequested;
  completed = funcBufferCompleted;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
  FAIL_IF_ASKED("cuptiActivityEnable");
  if ((unsigned)kind >= 32)
    return CUPTI_ERROR_NOT_SUPPORTED;
  __atomic_fetch_or(&enabled, 1u << kind, __ATOMIC_RELEASE);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
  FAIL_IF_ASKED("cuptiActivityDisable");
  if ((unsigned)kind >= 32)
    return CUPTI_ERROR_NOT_SUPPORTED;
  __atomic_fetch_and(&enabled, ~(1u << kind), __ATOMIC_RELEASE);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetTimestamp(uint64_t *timestamp)
{
  FAIL_IF_ASKED("cuptiGetTimestamp");
  *timestamp = now_ns();
  return CUPTI_SUCCESS;
}

/* Hands every pending record to the program, in buffers it provides. */
CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
  (void)flag;
  FAIL_IF_ASKED("cuptiActivityFlushAll");
  if (requested == NULL || completed == NULL)
    return CUPTI_SUCCESS;
  for (;;) {
    pthread_mutex_lock(&cupti_lock);
    size_t have = npending;
    pthread_mutex_unlock(&cupti_lock);
    if (have == 0)
      return CUPTI_SUCCESS;
    uint8_t *buffer = NULL;
    size_t size = 0, max_records = 0;
    requested(&buffer, &size, &max_records);
    size_t fit = size / sizeof(sim_record);
    if (buffer == NULL || fit == 0)
      return CUPTI_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&cupti_lock);
    size_t n = npending < fit ? npending : fit;
    memcpy(buffer, pending, n * sizeof *pending);
    memmove(pending, pending + n, (npending - n) * sizeof *pending);
    npending -= n;
    pthread_mutex_unlock(&cupti_lock);
    completed(NULL, 0, buffer, size, n * sizeof(sim_record));
  }
}

CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer,
                                       size_t validBufferSizeBytes,
                                       CUpti_Activity **record)
{
  sim_record *next = *record == NULL ? (sim_record *)(void *)buffer
                                     : (sim_record *)(void *)*record + 1;
  if ((uint8_t *)(next + 1) > buffer + validBufferSizeBytes)
    return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = &next->base;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
  switch (result) {
  case CUPTI_SUCCESS: *str = "CUPTI_SUCCESS"; break;
  case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    *str = "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (simulated)";
    break;
  case CUPTI_ERROR_OUT_OF_MEMORY: *str = "CUPTI_ERROR_OUT_OF_MEMORY"; break;
  default: *str = "CUPTI_ERROR_UNKNOWN"; break;
  }
  return CUPTI_SUCCESS;
}
