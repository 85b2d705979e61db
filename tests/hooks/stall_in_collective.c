/*
 * A test hook for the GPU machine: one rank held back before its
 * collective, for the watchdog to name.
 *
 *   STALL_RANK=R LD_PRELOAD=tests/build/hooks/stall_in_collective.so ./prog
 *
 * Preloaded before the real libnccl, ncclAllReduce and ncclAllGather never
 * return on rank R (the rank NCCL gives the communicator): that rank never
 * queues its collective. The other ranks queue theirs, which NCCL returns
 * from at once, and wait in their stream synchronisation for rank R. Every
 * other call, and every other rank, is NCCL's. Not part of the examples:
 * only tests/suites/90-gpu.sh uses it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include <dlfcn.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Stalls for ever if comm's rank is STALL_RANK; else returns NCCL's
 * function `name`, or NULL (said on stderr). */
static void *stall_or_real(ncclComm_t comm, const char *name)
{
  const char *stall = getenv("STALL_RANK");
  int rank = -1;
  if (stall != NULL && ncclCommUserRank(comm, &rank) == ncclSuccess &&
      rank == atoi(stall)) {
    fprintf(stderr, "stall_in_collective: rank %d stalls in %s (test hook)\n",
            rank, name);
    for (;;)
      pause();
  }
  void *real = dlsym(RTLD_NEXT, name);
  if (real == NULL)
    fprintf(stderr, "stall_in_collective: NCCL's %s not found: %s\n", name,
            dlerror());
  return real;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream)
{
  ncclResult_t (*real)(const void *, void *, size_t, ncclDataType_t,
                       ncclRedOp_t, ncclComm_t, cudaStream_t);
  *(void **)&real = stall_or_real(comm, "ncclAllReduce");
  return real ? real(send, recv, count, type, op, comm, stream)
              : ncclSystemError;
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream)
{
  ncclResult_t (*real)(const void *, void *, size_t, ncclDataType_t,
                       ncclComm_t, cudaStream_t);
  *(void **)&real = stall_or_real(comm, "ncclAllGather");
  return real ? real(send, recv, count, type, comm, stream) : ncclSystemError;
}
