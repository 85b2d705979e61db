/*
 * A test hook for the GPU machine: a real hang, for the watchdog to end.
 *
 *   STALL_RANK=R LD_PRELOAD=tests/build/hooks/stall_in_register.so ./prog
 *
 * Preloaded before the real libnccl, this ncclCommWindowRegister never
 * returns on rank R (the rank NCCL gives the communicator), as a rank would
 * that waits in a collective call for a peer that never comes; the other
 * ranks go on into NCCL's own ncclCommWindowRegister and wait there for
 * rank R. Every other call, and every other rank, is NCCL's. Not part of the
 * examples: only tests/suites/90-gpu.sh uses it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include <dlfcn.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef ncclResult_t (*register_fn)(ncclComm_t, void *, size_t, ncclWindow_t *,
                                    int);

ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size,
                                    ncclWindow_t *win, int winFlags)
{
  const char *stall = getenv("STALL_RANK");
  int rank = -1;
  if (stall != NULL && ncclCommUserRank(comm, &rank) == ncclSuccess &&
      rank == atoi(stall)) {
    fprintf(stderr, "stall_in_register: rank %d stalls in"
                    " ncclCommWindowRegister (test hook)\n", rank);
    for (;;)
      pause();
  }
  register_fn real = (register_fn)dlsym(RTLD_NEXT, "ncclCommWindowRegister");
  if (real == NULL) {
    fprintf(stderr, "stall_in_register: NCCL's ncclCommWindowRegister not"
                    " found: %s\n", dlerror());
    return ncclSystemError;
  }
  return real(comm, buff, size, win, winFlags);
}
