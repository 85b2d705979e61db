/* ncclsim: what a program asks of a communicator (see sim.h): its state,
 * size and rank. */
#include "sim.h"

#include <dlfcn.h>
#include <stdio.h>

/* Inside a group the communicator's operations are in progress until
 * ncclGroupEnd: NCCL 2.30.7 then says ncclInProgress here, and its
 * ncclCommUserRank and ncclCommCount fail with a warning (src/init.cc,
 * ncclCommEnsureReady). */
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
  if (comm == NULL || asyncError == NULL)
    return ncclInvalidArgument;
  pthread_mutex_lock(&lock);
  int busy = comm->in_progress; /* nonblocking.c */
  comm->in_progress = 0;
  pthread_mutex_unlock(&lock);
  if (!in_group() && !busy)
    nonblocking_publish(comm);
  *asyncError = in_group() || busy ? ncclInProgress : ncclSuccess;
  return ncclSuccess;
}

/* As NCCL's ncclCommEnsureReady, it asks the communicator's state through
 * the exported ncclCommGetAsyncError: NCCL 2.30.7's libnccl.so.2 (PyPI)
 * calls it through its PLT, so a preloaded library's definition runs. The
 * simulation's library binds its own calls (-Bsymbolic-functions): the
 * first definition in the process is asked for by name. */
static ncclResult_t ensure_ready(ncclComm_t comm, const char *call)
{
  typedef ncclResult_t ask_fn(ncclComm_t, ncclResult_t *);
  ask_fn *ask = (ask_fn *)dlsym(RTLD_DEFAULT, "ncclCommGetAsyncError");
  ncclResult_t state = ncclSuccess;
  (ask != NULL ? ask : ncclCommGetAsyncError)(comm, &state);
  if (state != ncclInProgress)
    return ncclSuccess;
  fprintf(stderr, "ncclsim: %s: NCCL WARN Attempt to use communicator before"
                  " the previous operation returned ncclSuccess\n", call);
  return ncclInvalidArgument;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
  if (comm == NULL || count == NULL)
    return ncclInvalidArgument;
  if (ensure_ready(comm, "ncclCommCount") != ncclSuccess)
    return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
  if (comm == NULL || rank == NULL)
    return ncclInvalidArgument;
  if (ensure_ready(comm, "ncclCommUserRank") != ncclSuccess)
    return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}
