/* ncclsim: what a program asks of a communicator (see sim.h): its state,
 * size and rank. */
#include "sim.h"

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

static ncclResult_t ensure_ready(ncclComm_t comm, const char *call)
{
  pthread_mutex_lock(&lock);
  int busy = comm->in_progress;
  pthread_mutex_unlock(&lock);
  if (!in_group() && !busy)
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
