/* ncclsim: communicators made from another (ncclCommSplit) or all at once
 * in one process (ncclCommInitAll), as NCCL 2.30.7's src/init.cc makes
 * them (ncclCommInitChildComm, ncclCommInitAll; the same in 2.27.7 to
 * 2.29.7 but for ranks sharing a device, from 2.30). */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every rank of `comm` calls it; the ranks with one color form a
 * communicator, ordered by key, then by their rank in `comm`. As NCCL:
 * the parent must be ready (else ncclInvalidArgument, *newcomm left as it
 * was); *newcomm is NULL at the return, and the new communicator is
 * written there by NCCL's work of the split: at the return for a blocking
 * parent, later for a non-blocking one, the parent then in progress
 * (nonblocking.h); inside a group, not before the group's end. It returns
 * ncclSuccess either way: the split's state is the parent's. The new
 * communicator is non-blocking as config says, else as its parent. */
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key,
                           ncclComm_t *newcomm, ncclConfig_t *config)
{
  const char *call = "ncclCommSplit";
  if (comm == NULL || newcomm == NULL) {
    nccl_warn(call, "ncclCommSplit : %s argument is NULL",
              comm == NULL ? "comm" : "newcomm");
    return ncclInvalidArgument;
  }
  if (ensure_ready(comm, call) != ncclSuccess)
    return ncclInvalidArgument;
  *newcomm = NULL;
  long long mine[2] = {color, key}, peer[2];
  exchange(comm, LANE_HOST, call, 0, color, mine, sizeof mine);
  int nranks = 0, rank = 0;
  for (int r = 0; r < comm->nranks; r++) {
    msg_header h;
    fetch(comm, LANE_HOST, r, &h, peer, sizeof peer);
    if (peer[0] != color)
      continue;
    nranks++;
    rank += peer[1] < key || (peer[1] == key && r < comm->rank);
  }
  finish_exchange(comm, LANE_HOST);
  if (color == NCCL_SPLIT_NOCOLOR) {
    (void)nonblocking_job(comm, ncclSuccess); /* NCCL's work all the same */
    return ncclSuccess;
  }
  /* Its rendezvous: the parent's, named by the split's place and color. */
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  const char *parent = strrchr(comm->dir, '/');
  char name[sizeof id.internal];
  int len = snprintf(name, sizeof name, "%.40s-s%lu-c%d",
                     parent ? parent + 1 : comm->dir, comm->seq[LANE_HOST], color);
  if (len < 0 || (size_t)len + strlen(SIM_MAGIC) >= sizeof id.internal)
    return ncclInternalError;
  memcpy(id.internal, SIM_MAGIC, strlen(SIM_MAGIC));
  memcpy(id.internal + strlen(SIM_MAGIC), name, (size_t)len + 1);
  int policy = config != NULL && config->CTAPolicy != NCCL_CONFIG_UNDEF_INT
                   ? config->CTAPolicy
                   : comm->cta_policy;
  ncclComm_t child = NULL;
  ncclResult_t res = init_rank(&child, nranks, id, rank, policy, call, 0);
  if (res != ncclSuccess)
    return res;
  child->nb.nonblocking = made_nonblocking(config, comm->nb.nonblocking);
  nonblocking_late_child(comm, newcomm, child);
  return ncclSuccess;
}

/* One rank of ncclCommInitAll, in a thread of its own: NCCL's group runs
 * an init job per rank at once, and here each meets the others. */
typedef struct init_job {
  ncclComm_t *comm;
  int ndev, rank, device;
  ncclUniqueId id;
  ncclResult_t res;
} init_job;

static void *init_one(void *arg)
{
  init_job *j = arg;
  current_device = j->device;
  j->res = init_with_config(j->comm, j->ndev, j->id, j->rank, NULL,
                            "ncclCommInitAll", 0);
  return NULL;
}

/* ndev ranks of one communicator, all in this process: rank i on device
 * devlist[i] (devlist NULL: device i), with NCCL's default config. NCCL
 * refuses a device out of range (ncclInvalidArgument) and one named twice
 * (ncclInvalidUsage; from 2.30 allowed with NCCL_MULTI_RANK_GPU_ENABLE).
 * The calling thread's device is as it was. */
ncclResult_t ncclCommInitAll(ncclComm_t *comms_out, int ndev,
                             const int *devlist)
{
  const char *call = "ncclCommInitAll";
  if (comms_out == NULL) {
    nccl_warn(call, "CommInitAll : comms argument is NULL");
    return ncclInvalidArgument;
  }
  if (ndev < 0) {
    nccl_warn(call, "Invalid device count requested : %d", ndev);
    return ncclInvalidArgument;
  }
  const int total = visible_devices();
  for (int i = 0; devlist != NULL && i < ndev; i++) {
    if (devlist[i] < 0 || devlist[i] >= total) {
      nccl_warn(call, "Invalid device %d (totalnDev=%d)", devlist[i], total);
      return ncclInvalidArgument;
    }
    for (int k = 0; k < i && !multi_rank_gpu_allowed(); k++)
      if (devlist[k] == devlist[i])
        return ncclInvalidUsage;
  }
  ncclUniqueId id;
  ncclResult_t res = ncclGetUniqueId(&id);
  init_job *jobs = calloc((size_t)ndev + 1, sizeof *jobs);
  pthread_t *threads = calloc((size_t)ndev + 1, sizeof *threads);
  if (res == ncclSuccess && (jobs == NULL || threads == NULL))
    res = ncclSystemError;
  int started = 0;
  for (; res == ncclSuccess && started < ndev; started++) {
    int i = started;
    jobs[i] = (init_job){.comm = &comms_out[i], .ndev = ndev, .rank = i,
                         .device = devlist ? devlist[i] : i, .id = id};
    if (pthread_create(&threads[i], NULL, init_one, &jobs[i]) != 0) {
      fprintf(stderr, "ncclsim: ncclCommInitAll: no thread for rank %d\n", i);
      _exit(SIM_EXIT_VIOLATION);
    }
  }
  for (int i = 0; i < started; i++) {
    pthread_join(threads[i], NULL);
    if (res == ncclSuccess || res == ncclInProgress)
      res = jobs[i].res;
  }
  free(jobs);
  free(threads);
  return res;
}

/* A thread without a rank of its own (ncclCommInitAll made the
 * communicators in threads of its own) takes the rank of its first
 * collective's. A queued collective runs in the thread that waits for it,
 * and waits there for its peers' parts: one thread that queues the collectives of
 * several ranks of one communicator (ncclCommInitAll's use from a single
 * thread, in a group) would wait for itself. Not simulated, and said. */
void one_thread_per_rank(ncclComm_t comm)
{
  static unsigned long threads;
  static _Thread_local unsigned long me; /* this thread, never reused */
  if (me == 0)
    me = __atomic_add_fetch(&threads, 1, __ATOMIC_RELAXED);
  if (thread_rank < 0) /* a rank of ncclCommInitAll's: its thread now */
    thread_rank = comm->rank;
  pthread_mutex_lock(&lock);
  comm->nb.driver = me;
  for (struct ncclComm *c = comms; c != NULL; c = c->next)
    if (c != comm && c->nb.driver == me && strcmp(c->dir, comm->dir) == 0) {
      pthread_mutex_unlock(&lock);
      not_simulated("one thread queuing collectives of ranks %d and %d of"
                    " one communicator (run each rank in a thread of its"
                    " own)", c->rank, comm->rank);
    }
  pthread_mutex_unlock(&lock);
}
