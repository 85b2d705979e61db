/* ncclsim: communicators made with config.blocking = 0, as NCCL 2.30.7
 * runs them (src/group.cc ncclGroupEndInternal): a call that gives NCCL
 * work on more than one rank starts a thread of NCCL's own, which launches
 * that work, and returns ncclInProgress (a collective returns the
 * communicator's state, src/enqueue.cc ncclEnqueueCheck); a window's
 * handle is NULL when ncclCommWindowRegister returns and written by that
 * thread later (src/dev_runtime.cc). The program polls
 * ncclCommGetAsyncError until it says ncclSuccess; here the first poll
 * after such a call says ncclInProgress, and the handles are written
 * before a poll says ncclSuccess. */
#include "sim.h"

_Thread_local int launched_by_nccl_thread;

/* What a call on comm returns, res being what it did. */
ncclResult_t nonblocking_result(ncclComm_t comm, ncclResult_t res)
{
  if (comm == NULL || !comm->nonblocking || comm->nranks == 1 ||
      res != ncclSuccess)
    return res;
  pthread_mutex_lock(&lock);
  comm->in_progress = 1;
  pthread_mutex_unlock(&lock);
  return ncclInProgress;
}

/* A window registered on a non-blocking communicator: the program's *win
 * stays NULL until a poll says ncclSuccess. 0 if comm is not one. */
int nonblocking_late_handle(ncclComm_t comm, ncclWindow_t *win)
{
  if (comm == NULL || !comm->nonblocking || comm->nranks == 1)
    return 0;
  pthread_mutex_lock(&lock);
  int kept = comm->nlate < (int)(sizeof comm->late_where / sizeof *comm->late_where);
  if (kept) {
    comm->late_where[comm->nlate] = win;
    comm->late_handle[comm->nlate++] = *win;
    comm->in_progress = 1;
    *win = NULL;
  }
  pthread_mutex_unlock(&lock);
  return kept;
}

/* NCCL's thread is done: the handles it owed are written. */
void nonblocking_publish(ncclComm_t comm)
{
  pthread_mutex_lock(&lock);
  for (int i = 0; i < comm->nlate; i++)
    *comm->late_where[i] = comm->late_handle[i];
  comm->nlate = 0;
  pthread_mutex_unlock(&lock);
}
