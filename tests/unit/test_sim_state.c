/*
 * The simulation's communicator state is NCCL's (tests/sim/nonblocking.h):
 * what NCCL 2.30.7's source does (src/init.cc, src/group.cc,
 * src/enqueue.cc; the same in 2.27.7 to 2.29.7), checked against the
 * simulation itself. One thread; communicators of one rank, and the two
 * of one ncclCommInitAll.
 *
 *   non-blocking init   ncclInProgress, the handle written at once; a call
 *                       that needs it ready fails (ncclInvalidArgument,
 *                       NCCL's warning) until a look says ncclSuccess
 *   split               of a non-blocking parent: ncclSuccess, *newcomm
 *                       NULL; written before the parent's poll says
 *                       ncclSuccess, or while the caller sleeps; of a
 *                       parent in progress: refused, *newcomm as it was
 *   groups              inside an open group the state is the one from
 *                       before; a communicator made there reads as 0
 *                       ranks, rank 0, until ncclGroupEnd (ncclInProgress
 *                       for a non-blocking group)
 *   window handles      a registration on a non-blocking communicator (of
 *                       one rank too): ncclSuccess, *win NULL, the
 *                       communicator in progress; the handle written only
 *                       once a look says ncclSuccess
 *   NULL arguments      NCCL's warning, ncclInvalidArgument
 *   ncclCommInitAll     a rank per device; a device named twice or out of
 *                       range refused
 */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "test_util.h"

#define BUSY "Attempt to use communicator before the previous operation returned ncclSuccess"
/* What the program put in *newcomm: a value NCCL never hands out. */
#define SENTINEL ((ncclComm_t)(uintptr_t)0x5e47)

static ncclComm_t nonblocking_comm(ncclResult_t *init)
{
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  EXPECT(ncclGetUniqueId(&id) == ncclSuccess);
  *init = ncclCommInitRankConfig(&comm, 1, id, 0, &config);
  return comm;
}

/* Polls until the state is not ncclInProgress; the polls made. */
static int poll_until_ready(ncclComm_t comm)
{
  ncclResult_t state = ncclInProgress;
  int polls = 0;
  while (state == ncclInProgress && polls < 100) {
    EXPECT(ncclCommGetAsyncError(comm, &state) == ncclSuccess);
    polls++;
  }
  EXPECT(state == ncclSuccess);
  return polls;
}

static void init_in_progress(void)
{
  ncclResult_t init;
  ncclComm_t comm = nonblocking_comm(&init);
  EXPECT(init == ncclInProgress);
  EXPECT(comm != NULL);
  int n = -1;
  EXPECT(ncclCommCount(comm, &n) == ncclInvalidArgument);
  EXPECT(n == -1);
  EXPECT(strcmp(ncclGetLastError(comm), BUSY) == 0);
  poll_until_ready(comm);
  EXPECT(ncclCommCount(comm, &n) == ncclSuccess && n == 1);
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
}

static void split_result_written_later(void)
{
  ncclResult_t init;
  ncclComm_t parent = nonblocking_comm(&init), child = SENTINEL,
             other = SENTINEL;
  poll_until_ready(parent);
  EXPECT(ncclCommSplit(parent, 0, 0, &child, NULL) == ncclSuccess);
  EXPECT(child == NULL);
  /* The parent is in progress: a second split is refused, its *newcomm
   * left as it was. */
  EXPECT(ncclCommSplit(parent, 0, 0, &other, NULL) == ncclInvalidArgument);
  EXPECT(other == SENTINEL);
  EXPECT(strcmp(ncclGetLastError(NULL), BUSY) == 0);
  EXPECT(__atomic_load_n(&child, __ATOMIC_ACQUIRE) == NULL);
  poll_until_ready(parent);
  EXPECT(child != NULL && child != SENTINEL);
  int n = -1, rank = -1;
  EXPECT(ncclCommCount(child, &n) == ncclSuccess && n == 1);
  EXPECT(ncclCommUserRank(child, &rank) == ncclSuccess && rank == 0);
  EXPECT(ncclCommDestroy(child) == ncclSuccess);

  /* A program that waits for the pointer, sleeping, as PyTorch does: NCCL
   * writes it without a poll; the parent may still be in progress. */
  child = NULL;
  EXPECT(ncclCommSplit(parent, 1, 0, &child, NULL) == ncclSuccess);
  const struct timespec nap = {0, 1000 * 1000};
  for (int ms = 0; ms < 2000 && __atomic_load_n(&child, __ATOMIC_ACQUIRE) == NULL;
       ms++)
    nanosleep(&nap, NULL);
  EXPECT(child != NULL);
  EXPECT(poll_until_ready(parent) == 2); /* the first look: in progress */
  EXPECT(ncclCommDestroy(child) == ncclSuccess);
  EXPECT(ncclCommDestroy(parent) == ncclSuccess);
}

static void groups_hand_over_at_their_end(void)
{
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  EXPECT(ncclGetUniqueId(&id) == ncclSuccess);
  EXPECT(ncclGroupStart() == ncclSuccess);
  EXPECT(ncclCommInitRankConfig(&comm, 1, id, 0, &config) == ncclSuccess);
  ncclResult_t state = ncclInProgress;
  EXPECT(ncclCommGetAsyncError(comm, &state) == ncclSuccess);
  EXPECT(state == ncclSuccess);
  int n = -1, rank = -1;
  EXPECT(ncclCommCount(comm, &n) == ncclSuccess && n == 0);
  EXPECT(ncclCommUserRank(comm, &rank) == ncclSuccess && rank == 0);
  EXPECT(ncclGroupEnd() == ncclInProgress);
  EXPECT(poll_until_ready(comm) == 2);
  EXPECT(ncclCommCount(comm, &n) == ncclSuccess && n == 1);

  /* A collective on a communicator in progress (a split of it, NCCL's
   * job at one rank too) is refused, inside a group too. */
  ncclComm_t none = SENTINEL;
  EXPECT(ncclCommSplit(comm, NCCL_SPLIT_NOCOLOR, 0, &none, NULL) == ncclSuccess);
  EXPECT(none == NULL);
  float *x = NULL;
  EXPECT(ncclMemAlloc((void **)&x, sizeof *x) == ncclSuccess);
  EXPECT(ncclGroupStart() == ncclSuccess);
  EXPECT(ncclAllReduce(x, x, 1, ncclFloat, ncclSum, comm, NULL) ==
         ncclInvalidArgument);
  EXPECT(ncclGroupEnd() == ncclSuccess);
  EXPECT(strcmp(ncclGetLastError(NULL), BUSY) == 0);
  poll_until_ready(comm);
  EXPECT(ncclMemFree(x) == ncclSuccess);
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
}

/* NCCL 2.30.7 src/dev_runtime.cc ncclCommWindowRegister: *win = NULL,
 * the registration a task of a group, which src/group.cc hands to NCCL's
 * thread for a non-blocking communicator of any size (ncclInProgress for
 * it); the call itself returns ncclSuccess. */
static void window_handle_after_the_poll(void)
{
  ncclResult_t init;
  ncclComm_t comm = nonblocking_comm(&init);
  poll_until_ready(comm);
  float *x = NULL;
  EXPECT(ncclMemAlloc((void **)&x, 4096) == ncclSuccess);
  ncclWindow_t win = (ncclWindow_t)SENTINEL;
  EXPECT(ncclCommWindowRegister(comm, x, 4096, &win, NCCL_WIN_COLL_SYMMETRIC) ==
         ncclSuccess);
  EXPECT(win == NULL);
  /* In progress: the first look (ncclCommUserRank's) refuses, and the
   * handle is still not written. */
  int rank = -1;
  EXPECT(ncclCommUserRank(comm, &rank) == ncclInvalidArgument);
  EXPECT(rank == -1);
  EXPECT(strcmp(ncclGetLastError(comm), BUSY) == 0);
  EXPECT(win == NULL);
  EXPECT(poll_until_ready(comm) == 1);
  EXPECT(win != NULL && win != (ncclWindow_t)SENTINEL);
  EXPECT(ncclCommUserRank(comm, &rank) == ncclSuccess && rank == 0);
  if (win != NULL && win != (ncclWindow_t)SENTINEL)
    EXPECT(ncclCommWindowDeregister(comm, win) == ncclSuccess);
  EXPECT(ncclMemFree(x) == ncclSuccess);
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
}

/* Inside an open group ncclCommGetAsyncError still reads the state
 * (NCCL 2.30.7 src/init.cc: comm->asyncResult, whatever the group): a
 * communicator whose init runs says ncclInProgress, never ncclSuccess. */
static void state_inside_a_group(void)
{
  ncclResult_t init;
  ncclComm_t comm = nonblocking_comm(&init);
  EXPECT(init == ncclInProgress);
  EXPECT(ncclGroupStart() == ncclSuccess);
  ncclResult_t state = ncclSuccess;
  EXPECT(ncclCommGetAsyncError(comm, &state) == ncclSuccess);
  EXPECT(state == ncclInProgress);
  EXPECT(ncclGroupEnd() == ncclSuccess);
  poll_until_ready(comm);
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
}

static void null_arguments(void)
{
  ncclResult_t state = ncclSuccess;
  int n = -1;
  EXPECT(ncclCommGetAsyncError(NULL, &state) == ncclInvalidArgument);
  EXPECT(strcmp(ncclGetLastError(NULL),
                "ncclGetAsyncError : comm argument is NULL") == 0);
  EXPECT(ncclCommCount(NULL, &n) == ncclInvalidArgument && n == -1);
  EXPECT(strcmp(ncclGetLastError(NULL), "CommCount : comm argument is NULL") == 0);
}

static void init_all(void)
{
  ncclComm_t comms[2] = {NULL, NULL};
  const int twice[2] = {1, 1}, outside[2] = {0, 99};
  EXPECT(ncclCommInitAll(comms, 2, twice) == ncclInvalidUsage);
  EXPECT(ncclCommInitAll(comms, 2, outside) == ncclInvalidArgument);
  EXPECT(comms[0] == NULL && comms[1] == NULL);
  EXPECT(ncclCommInitAll(comms, 2, NULL) == ncclSuccess);
  for (int r = 0; r < 2; r++) {
    int n = -1, rank = -1;
    EXPECT(comms[r] != NULL);
    EXPECT(ncclCommCount(comms[r], &n) == ncclSuccess && n == 2);
    EXPECT(ncclCommUserRank(comms[r], &rank) == ncclSuccess && rank == r);
  }
  int device = -1;
  EXPECT(cudaGetDevice(&device) == cudaSuccess && device == 0);
  for (int r = 0; r < 2; r++)
    EXPECT(ncclCommDestroy(comms[r]) == ncclSuccess);
}

int main(void)
{
  init_in_progress();
  split_result_written_later();
  groups_hand_over_at_their_end();
  window_handle_after_the_poll();
  state_inside_a_group();
  null_arguments();
  init_all();
  if (test_failures == 0)
    printf("test_sim_state: all passed\n");
  return test_failures == 0 ? 0 : 1;
}
