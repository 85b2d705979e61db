/* ncclsim: what a program asks of a communicator (see sim.h): its state,
 * size and rank, as NCCL 2.30.7 answers (src/init.cc; the same in 2.27.7
 * to 2.29.7): a NULL argument fails with NCCL's warning (CommCheck,
 * PtrCheck in src/misc/argcheck.cc), a communicator in progress fails
 * ncclCommCount and ncclCommUserRank (ncclCommEnsureReady), and one made
 * inside a group still open reads as 0 ranks, rank 0: NCCL sets them when
 * it makes the communicator, at the group's end. And how the simulation
 * says NCCL's warnings, and what it does not simulate. */
#include "sim.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

void nccl_warn(const char *call, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  fprintf(stderr, "ncclsim: %s: NCCL WARN %s\n", call, last_error);
}

_Noreturn void not_simulated(const char *fmt, ...)
{
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  fflush(stdout);
  fprintf(stderr, "ncclsim: not simulated here: %s (tests/README.md lists"
                  " what the simulation runs)\n", what);
  _exit(SIM_EXIT_VIOLATION);
}

/* NCCL's check of an argument: `opname` as NCCL names the call in it. */
static int null_argument(const void *p, const char *call, const char *opname,
                         const char *argument)
{
  if (p == NULL)
    nccl_warn(call, "%s : %s argument is NULL", opname, argument);
  return p == NULL;
}

/* The state from before an open group: a group hands NCCL nothing until it
 * ends. The first look after an operation says ncclInProgress
 * (nonblocking.c). */
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
  const char *call = "ncclCommGetAsyncError";
  if (null_argument(comm, call, "ncclGetAsyncError", "comm") ||
      null_argument(asyncError, call, "ncclGetAsyncError", "asyncError"))
    return ncclInvalidArgument;
  *asyncError = comm_state_look(comm);
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
  const char *call = "ncclCommCount";
  if (null_argument(comm, call, "CommCount", "comm") ||
      null_argument(count, call, "CommCount", "count"))
    return ncclInvalidArgument;
  if (ensure_ready(comm, call) != ncclSuccess)
    return ncclInvalidArgument;
  *count = comm->nb.made_in_group ? 0 : comm->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
  const char *call = "ncclCommUserRank";
  if (null_argument(comm, call, "CommUserRank", "comm") ||
      null_argument(rank, call, "CommUserRank", "rank") ||
      ensure_ready(comm, call) != ncclSuccess)
    return ncclInvalidArgument;
  *rank = comm->nb.made_in_group ? 0 : comm->rank;
  return ncclSuccess;
}
