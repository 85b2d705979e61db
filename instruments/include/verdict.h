/*
 * The watchdog's decisions, pure (unit-tested without threads or MPI):
 * when a rank's state means the job hangs, and which rank to blame.
 *
 * A rank's state is what call_in_progress (calls.h) says; `ms` how long
 * that call has run, or for CALL_NONE how long since the rank's last call
 * ended; `idle_ms` how long since its last call ended, whatever it is in
 * now; `seq` how many calls that all ranks make it has begun (NCCL's
 * communicator, window and collective calls, the transports' collectives):
 * a rank with fewer is behind the others.
 */
#ifndef VERDICT_H
#define VERDICT_H

enum call_state {
  CALL_GONE = -1, /* no thread of this process runs the rank */
  CALL_NONE = 0,  /* in no watched call */
  CALL_OWN = 1,   /* in a call of its own */
  CALL_WAIT = 2,  /* waiting for the other ranks: a transport's collective,
                     or a wait for the GPU while NCCL collectives it queued
                     may not have run (their kernels wait for every rank) */
  CALL_NCCL = 3,  /* in an NCCL call that all ranks make */
};

typedef struct rank_view {
  int rank;
  enum call_state state;
  double ms, idle_ms;
  unsigned long seq;
} rank_view;

/* Whether the ranks one process sees hang at a limit of limit_s seconds:
 * a call of a rank's own, or an NCCL call, has run that long; or a rank
 * has waited that long for the others and no rank seen here has ended a
 * call within the limit (a rank that ends call after call, even one the
 * others wait for, is making progress). */
int verdict_hangs(const rank_view *ranks, int n, int limit_s);

/* How likely a rank in this state holds the others up, 0 not at all: a
 * call of its own most (the others most often wait for it); then a rank
 * in no watched call for the whole limit (stuck, or busy, outside any
 * call while others wait); then an NCCL call all ranks make; then a wait
 * for the other ranks. */
int verdict_suspicion(const rank_view *r, int limit_s);

/* Keeps in *best the rank to blame among those given (suspicion above 0):
 * one in a call of its own; else the one behind the others (the lowest
 * seq); else the most suspect; among equals the longest. best->state
 * CALL_GONE if none is suspect. */
void verdict_blame(const rank_view *r, int limit_s, rank_view *best);

#endif
