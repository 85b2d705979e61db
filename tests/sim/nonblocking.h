/* ncclsim: communicators made with config.blocking = 0, and the rules of
 * NCCL's communicator state that every communicator follows (included by
 * sim.h; nonblocking.c and split.c say what NCCL's source does).
 *
 * What a program sees, as in NCCL 2.27.7 to 2.30.7 (src/init.cc,
 * src/group.cc, src/enqueue.cc, src/dev_runtime.cc, the same in each):
 *   - a call that hands work to NCCL's own thread returns ncclInProgress
 *     (or, as ncclCommSplit and ncclCommWindowRegister do, ncclSuccess)
 *     and leaves its communicator in progress until that thread is done;
 *     here the first look at it (ncclCommGetAsyncError, or a call that
 *     checks it) says ncclInProgress, and a later one ncclSuccess;
 *   - a call that needs a ready communicator (a collective, a window
 *     registration, a split, ncclCommCount, ncclCommUserRank,
 *     ncclCommFinalize, ncclCommDestroy) fails on one in progress with
 *     ncclInvalidArgument and "Attempt to use communicator before the
 *     previous operation returned ncclSuccess" (ncclCommEnsureReady);
 *   - inside ncclGroupStart/ncclGroupEnd nothing is handed over until the
 *     group ends: ncclCommGetAsyncError says the state from before the
 *     group, and a communicator made inside the open group reads as ready
 *     with 0 ranks, rank 0 (NCCL has not started making it); ncclGroupEnd
 *     returns ncclInProgress for a non-blocking group;
 *   - ncclCommSplit writes NULL into *newcomm, and NCCL's thread writes the
 *     new communicator there later: here when a look at the parent says
 *     ncclSuccess, or when the calling thread sleeps (a program that waits
 *     for the pointer, as PyTorch does), or after a second at the latest. */
#ifndef NCCLSIM_NONBLOCKING_H
#define NCCLSIM_NONBLOCKING_H

#include <nccl.h>

struct late_child; /* a split's new communicator, not yet written */

/* A communicator's state, as its struct ncclComm (sim.h) holds it. */
struct comm_state {
  int nonblocking;   /* config.blocking = 0 (after NCCL_COMM_BLOCKING) */
  int in_progress;   /* an operation NCCL's thread has not finished */
  int made_in_group; /* made inside a group still open */
  ncclWindow_t *late_where[8], late_handle[8]; /* handles written later */
  int nlate;
  struct late_child *child; /* a split of it whose result is not written */
  unsigned long driver; /* the thread that queued its last collective */
};

/* windows.c: whether the calling thread is inside ncclGroupStart/End. */
int in_group(void);

/* nonblocking.c */
extern _Thread_local int launched_by_nccl_thread;
/* What a call on comm that did `res` returns: on a non-blocking
 * communicator of more than one rank, outside a group, ncclInProgress (the
 * communicator then in progress); inside a group `res`, the communicator
 * joining the group. */
ncclResult_t nonblocking_result(ncclComm_t comm, ncclResult_t res);
/* The same for a call NCCL runs as a job of its own (making, finalizing,
 * splitting a communicator), in progress at one rank too. */
ncclResult_t nonblocking_job(ncclComm_t comm, ncclResult_t res);
/* A communicator made inside an open group (any kind): joins it. */
void group_made(ncclComm_t comm);
/* ncclGroupEnd closing the outermost group (windows.c): what it returns,
 * `res` being what it did. */
ncclResult_t nonblocking_group_end(ncclResult_t res);
/* A window registered on a non-blocking communicator: the program's *win
 * stays NULL until a look says ncclSuccess. 0 if comm is not one. */
int nonblocking_late_handle(ncclComm_t comm, ncclWindow_t *win);
/* A look said ncclSuccess: the handles and the split's result owed are
 * written. */
void nonblocking_publish(ncclComm_t comm);
/* ncclCommSplit of a non-blocking parent: *where gets child later. */
void nonblocking_late_child(ncclComm_t parent, ncclComm_t *where,
                            ncclComm_t child);
/* ncclCommDestroy, ncclCommAbort: what is owed is dropped. */
void nonblocking_forget(ncclComm_t comm);
/* NCCL's ncclCommEnsureReady: ncclSuccess, or (comm in progress) the
 * warning on stderr and ncclInvalidArgument. It looks through the
 * process's first definition of ncclCommGetAsyncError, as NCCL's library
 * calls it through its PLT. */
ncclResult_t ensure_ready(ncclComm_t comm, const char *call);
/* ncclCommGetAsyncError's look: ncclInProgress or ncclSuccess. */
ncclResult_t comm_state_look(ncclComm_t comm);

/* queries.c: NCCL's WARN (its words, printed here whatever NCCL_DEBUG
 * says, and kept for ncclGetLastError). */
void nccl_warn(const char *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* queries.c: "ncclsim: not simulated here: WHAT" on stderr, and the
 * process ends (SIM_EXIT_VIOLATION). */
_Noreturn void not_simulated(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* split.c: a collective on comm; one thread queuing those of two ranks of
 * one communicator is not simulated (the process ends, saying so). */
void one_thread_per_rank(ncclComm_t comm);

/* nccl.c: a communicator made by `call` (split.c makes them too) */
ncclResult_t init_rank(ncclComm_t *out, int nranks, ncclUniqueId id, int rank,
                       int cta_policy, const char *call, int injectable);
/* Whether a communicator made with config is non-blocking (config NULL:
 * `otherwise`), NCCL_COMM_BLOCKING=0 or 1 winning over both. */
int made_nonblocking(const ncclConfig_t *config, int otherwise);
/* ncclCommInitRankConfig's work, for `call` (config may be NULL). */
ncclResult_t init_with_config(ncclComm_t *comm, int nranks, ncclUniqueId id,
                              int rank, const ncclConfig_t *config,
                              const char *call, int injectable);
/* Ranks may share a device: NCCL >= 2.30, NCCL_MULTI_RANK_GPU_ENABLE. */
int multi_rank_gpu_allowed(void);

#endif
