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
#include "gaps.h"

pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
call *calls;
size_t ncalls, calls_cap;
kind *kinds;
size_t nkinds, kinds_cap;
int cupti_ok;
static int exit_registered;

int grow(void **array, size_t *cap, size_t used, size_t size)
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
