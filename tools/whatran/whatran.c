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
#define _GNU_SOURCE /* dlsym(RTLD_NEXT), dl_iterate_phdr */
#endif
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "whatran.h"

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
