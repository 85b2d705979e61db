/*
 * The watchdog's decisions, pure (unit-tested without threads or MPI):
 * when a rank's state means the job hangs, and which rank to blame.
 *
 * A rank's state is what call_in_progress (calls.h) says: 1 in a call of
 * its own, 3 in an NCCL call all ranks make, 2 waiting for the other ranks
 * (a transport's collective), 0 in no watched call, -1 not running; `ms`
 * how long that call has run, or for state 0 how long since the rank's
 * last call ended; `idle_ms` how long since its last call ended, whatever
 * it is in now.
 */
#ifndef VERDICT_H
#define VERDICT_H

typedef struct rank_view {
  int rank, state;
  double ms, idle_ms;
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
 * of the programs' own for the other ranks. */
int verdict_suspicion(const rank_view *r, int limit_s);

/* Keeps in *best the rank to blame among those given: the most suspect,
 * and among those the longest; best->state -1 if none is suspect. */
void verdict_blame(const rank_view *r, int limit_s, rank_view *best);

#endif
