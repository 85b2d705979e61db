/*
 * libwhatran.so: What ran, for an NCCL program this suite did not build.
 *
 *   LD_PRELOAD=/path/to/tools/libwhatran.so PROGRAM ARGS...
 *   [WHATRAN_OUT=FILE] [WHATRAN_JSON=FILE]
 *
 * Preloaded, it sits between the program and NCCL: it notes each
 * communicator, whatever call made it (ncclCommInitRank, ...RankConfig,
 * ...RankScalable, ncclCommInitAll, ncclCommSplit, ncclCommShrink,
 * ncclCommGrow, or one it first meets in a collective), each window
 * (ncclCommWindowRegister, ...Deregister: its size, and its handle, read
 * once NCCL wrote it), and each collective (the call's thread and time,
 * its sizes, whether each buffer lay in a window of its communicator,
 * whether it was in place), and records with CUPTI the kernels and copies
 * that each call launched (the instruments' engine: the work whose
 * launching CUDA call the same thread made during the NCCL call, or during
 * the ncclGroupEnd that ended its group). When a communicator is
 * destroyed, and at exit for any left, it classifies the work as the
 * programs' own What ran does (what_ran_describe) and, at exit, writes per
 * communicator one line per distinct outcome, the ranks of this process
 * that share it said once:
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
 * It finds NCCL wherever the process loaded it, a library opened with
 * RTLD_LOCAL included (as Python opens PyTorch's), and never ends the
 * program: a call that no library defines is said once and returns
 * ncclSystemError (loader.c).
 * It links neither CUPTI nor the CUDA runtime (loader.c): without CUPTI,
 * or with CUPTI failing (or held by a profiler), its lines say "not
 * measured". A child process forked from a measured one reports its own
 * communicators only, unmeasured: CUPTI is not used after a fork.
 *
 * Replays of CUDA graphs are said apart: CUPTI ties their work to the graph
 * launch, of no one communicator. Limits: the first MAX_CALLS calls of
 * each communicator are classified (the rest counted).
 *
 * Files: whatran.c (this: the library's life, the calls that make
 * communicators), collectives.c (windows, groups, collectives),
 * records.c, report.c, loader.c (whatran.h says what each keeps).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dl_iterate_phdr */
#endif
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "whatran.h"

/* Calls of newer NCCL releases than the nccl.h this may be built with:
 * declared as NCCL 2.30.7's nccl.h declares them (the same declaration
 * twice is allowed; a different one fails the build). */
ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks,
                                      int myrank, int nId,
                                      ncclUniqueId *commIds,
                                      ncclConfig_t *config);
ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList,
                            int excludeRanksCount, ncclComm_t *newcomm,
                            ncclConfig_t *config, int shrinkFlags);
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks,
                          const ncclUniqueId *uniqueId, int rank,
                          ncclComm_t *newcomm, ncclConfig_t *config);

uint64_t now(void) { return measuring == 1 ? engine_probe_now() : 0; }

/* ---------------------------------------------- the library's own life */

static pid_t owner;      /* the process that loaded it */
static int nccl_at_load; /* NCCL was loaded before the program started */

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

/* At exit, where no communicator was seen. A call to make one that came
 * through (measuring started) did not succeed. Else NCCL loaded with the
 * program (a library it links) is reached through this library's
 * wrappers: the program made no communicator. NCCL opened later may be
 * reached past them, through dlsym on a handle of the program's own. */
static void nothing_seen(void)
{
  int found = 0;
  if (comms != NULL || getpid() != owner)
    return;
  dl_iterate_phdr(nccl_library, &found);
  if (measuring != MEASURING_NOT_STARTED) /* a call to make one came through */
    say("What ran (libwhatran): the program made no NCCL communicator: its"
        " calls to make one did not succeed\n");
  else if (found && nccl_at_load)
    say("What ran (libwhatran): the program made no NCCL communicator"
        " (it may have stopped before its first NCCL call)\n");
  else if (found)
    say("What ran (libwhatran): NCCL is loaded in this process, but no call"
        " to it went through this library: the program made no"
        " communicator, or it reaches NCCL through a handle of its own"
        " (dlsym on a dlopen'd libnccl, as some Python bindings do), and"
        " then nothing can be said of its communicators\n");
}

/* fork: the lock is held across it, so that no record is half written;
 * the child keeps none of the parent's records and uses no CUPTI. */
static void before_fork(void) { pthread_mutex_lock(&lock); }
static void after_fork_parent(void) { pthread_mutex_unlock(&lock); }
static void after_fork_child(void)
{
  pthread_mutex_init(&lock, NULL);
  comms = NULL; /* the parent's, left as they are */
  measuring = MEASURING_FORKED;
}

/* Registered at load: it touches no CUDA. */
__attribute__((constructor)) static void loaded(void)
{
  owner = getpid();
  dl_iterate_phdr(nccl_library, &nccl_at_load);
  pthread_atfork(before_fork, after_fork_parent, after_fork_child);
  atexit(nothing_seen);
}

void start_measuring(void)
{
  pthread_mutex_lock(&lock);
  int first = measuring == MEASURING_NOT_STARTED;
  if (first)
    measuring = 0;
  pthread_mutex_unlock(&lock);
  if (!first)
    return;
  measuring = engine_probe_start();
  /* Registered once the program has used CUDA: the report runs before the
   * CUDA runtime's own exit handler. */
  atexit(report);
}

/* --------------------------------------- the calls that make communicators */

/* The library is built with -fvisibility=hidden: the wrappers alone are
 * what the program sees. */
#define EXPORTED __attribute__((visibility("default")))

/* The bytes that name a communicator made by `call` from `key` (the same
 * on every rank of it in this process: a unique id, a parent's label). */
static ncclUniqueId made_id(const char *call, const void *key, size_t bytes)
{
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  int n = snprintf(id.internal, sizeof id.internal, "%s:", call);
  memcpy(id.internal + n, key, bytes < sizeof id - n ? bytes : sizeof id - n);
  return id;
}

/* Whether NCCL makes a communicator with config non-blocking:
 * config.blocking = 0, else `otherwise`, NCCL_COMM_BLOCKING=0 or 1 winning
 * over both (NCCL 2.30.7 src/init.cc parseCommConfig, envConfigOverride). */
static int nonblocking_by(const ncclConfig_t *config, int otherwise)
{
  const char *env = getenv("NCCL_COMM_BLOCKING");
  if (env != NULL && (strcmp(env, "0") == 0 || strcmp(env, "1") == 0))
    return *env == '0';
  return config != NULL ? config->blocking == 0 : otherwise;
}

/* A communicator made by `call` from `key`, non-blocking or not (then
 * ncclInProgress: its rank known once the program's poll says ready). */
static void made(ncclResult_t res, ncclComm_t *comm, const char *call,
                 const void *key, size_t bytes, int nonblocking)
{
  if ((res != ncclSuccess && res != ncclInProgress) || comm == NULL ||
      *comm == NULL)
    return;
  ncclUniqueId id = made_id(call, key, bytes);
  pthread_mutex_lock(&lock);
  int label = label_of(&id);
  pthread_mutex_unlock(&lock);
  note_comm(*comm, label, nonblocking || res == ncclInProgress);
}

/* A communicator's label in this process, 0 if it was never seen. */
static int label_now(ncclComm_t comm)
{
  pthread_mutex_lock(&lock);
  comm_rec *c = find(comm);
  int label = c ? c->label : 0;
  pthread_mutex_unlock(&lock);
  return label;
}

EXPORTED ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks,
                                       ncclUniqueId id, int rank)
{
  NEXT(ncclCommInitRank);
  start_measuring();
  ncclResult_t res = next_fn(comm, nranks, id, rank);
  made(res, comm, "id", &id, sizeof id, nonblocking_by(NULL, 0));
  return res;
}

EXPORTED ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks,
                                             ncclUniqueId id, int rank,
                                             ncclConfig_t *config)
{
  NEXT(ncclCommInitRankConfig);
  start_measuring();
  ncclResult_t res = next_fn(comm, nranks, id, rank, config);
  made(res, comm, "id", &id, sizeof id, nonblocking_by(config, 0));
  return res;
}

EXPORTED ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks,
                                               int rank, int nId,
                                               ncclUniqueId *ids,
                                               ncclConfig_t *config)
{
  NEXT(ncclCommInitRankScalable);
  start_measuring();
  ncclResult_t res = next_fn(comm, nranks, rank, nId, ids, config);
  if (nId > 0 && ids != NULL)
    made(res, comm, "id", &ids[0], sizeof ids[0], nonblocking_by(config, 0));
  return res;
}

/* ndev ranks of one communicator, all in this process. */
EXPORTED ncclResult_t ncclCommInitAll(ncclComm_t *comms_out, int ndev,
                                      const int *devlist)
{
  NEXT(ncclCommInitAll);
  start_measuring();
  static int calls; /* each call is a communicator of its own */
  pthread_mutex_lock(&lock);
  int key = ++calls;
  pthread_mutex_unlock(&lock);
  ncclResult_t res = next_fn(comms_out, ndev, devlist);
  for (int i = 0; i < ndev && comms_out != NULL; i++)
    made(res, &comms_out[i], "all", &key, sizeof key,
         nonblocking_by(NULL, 0));
  return res;
}

EXPORTED ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key,
                                    ncclComm_t *newcomm, ncclConfig_t *config)
{
  NEXT(ncclCommSplit);
  int parent[2] = {label_now(comm), color};
  int nonblocking = nonblocking_by(config, is_nonblocking(comm));
  ncclResult_t res = next_fn(comm, color, key, newcomm, config);
  /* A non-blocking parent: NULL now, NCCL's thread writes it later (NCCL
   * 2.30.7 src/init.cc ncclCommInitChildComm). */
  if (res == ncclSuccess && newcomm != NULL && *newcomm == NULL &&
      color != NCCL_SPLIT_NOCOLOR) {
    ncclUniqueId id = made_id("split", parent, sizeof parent);
    split_later(comm, newcomm, &id, nonblocking);
  } else
    made(res, newcomm, "split", parent, sizeof parent, nonblocking);
  return res;
}

EXPORTED ncclResult_t ncclCommShrink(ncclComm_t comm, int *exclude,
                                     int nexclude, ncclComm_t *newcomm,
                                     ncclConfig_t *config, int flags)
{
  NEXT(ncclCommShrink);
  int parent = label_now(comm);
  ncclResult_t res = next_fn(comm, exclude, nexclude, newcomm, config, flags);
  made(res, newcomm, "shrink", &parent, sizeof parent,
       nonblocking_by(config, is_nonblocking(comm)));
  return res;
}

EXPORTED ncclResult_t ncclCommGrow(ncclComm_t comm, int nranks,
                                   const ncclUniqueId *id, int rank,
                                   ncclComm_t *newcomm, ncclConfig_t *config)
{
  NEXT(ncclCommGrow);
  start_measuring();
  ncclResult_t res = next_fn(comm, nranks, id, rank, newcomm, config);
  if (id != NULL)
    made(res, newcomm, "id", id, sizeof *id,
         nonblocking_by(config, is_nonblocking(comm)));
  return res;
}

/* Where a communicator is destroyed, its calls are classified: the handle
 * may be reused by the next one. Before it goes: the last chance to ask
 * its rank. */
static void before_destroy(ncclComm_t comm)
{
  pthread_mutex_lock(&lock);
  comm_rec *c = find(comm);
  if (c != NULL)
    settle(c, LOOK_IF_BLOCKING);
  pthread_mutex_unlock(&lock);
}

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

EXPORTED ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
  NEXT(ncclCommDestroy);
  before_destroy(comm);
  ncclResult_t res = next_fn(comm);
  retire(comm);
  return res;
}

EXPORTED ncclResult_t ncclCommAbort(ncclComm_t comm)
{
  NEXT(ncclCommAbort);
  before_destroy(comm);
  ncclResult_t res = next_fn(comm);
  retire(comm);
  return res;
}
