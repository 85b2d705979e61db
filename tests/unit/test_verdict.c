/* The watchdog's decisions (instruments/include/verdict.h), from their
 * definitions; a limit of 2 s. */
#include <stdio.h>

#include "test_util.h"
#include "verdict.h"

enum { OWN = CALL_OWN, NCCL = CALL_NCCL, WAIT = CALL_WAIT, NONE = CALL_NONE,
       GONE = CALL_GONE };
#define LIMIT 2

/* A rank in `state` for `s` seconds, whose last call ended `idle` s ago,
 * after 5 calls that all ranks make. */
static rank_view at(int rank, int state, double s, double idle)
{
  return (rank_view){.rank = rank, .state = (enum call_state)state,
                     .ms = s * 1e3, .idle_ms = idle * 1e3, .seq = 5};
}

/* The same, after `seq` calls that all ranks make. */
static rank_view at_seq(int rank, int state, double s, unsigned long seq)
{
  rank_view v = at(rank, state, s, s);
  v.seq = seq;
  return v;
}

static int blamed(const rank_view *r, int n)
{
  rank_view best = {.state = -1};
  for (int i = 0; i < n; i++)
    verdict_blame(&r[i], LIMIT, &best);
  return best.state < 0 ? -1 : best.rank;
}

int main(void)
{
  /* A call of its own, or an NCCL call, past the limit hangs. */
  rank_view own[] = {at(0, OWN, 2.5, 2.5), at(1, WAIT, 2.5, 2.5)};
  EXPECT(verdict_hangs(own, 2, LIMIT));
  rank_view nccl[] = {at(0, NCCL, 2.0, 2.0)};
  EXPECT(verdict_hangs(nccl, 1, LIMIT));
  rank_view short_call[] = {at(0, OWN, 1.9, 1.9)};
  EXPECT(!verdict_hangs(short_call, 1, LIMIT));

  /* A wait past the limit while rank 0 ends call after call (a phase only
   * rank 0 runs): progress, no hang. */
  rank_view phase[] = {at(0, OWN, 0.05, 0.05), at(1, WAIT, 5.0, 5.0)};
  EXPECT(!verdict_hangs(phase, 2, LIMIT));
  rank_view between[] = {at(0, NONE, 0.01, 0.01), at(1, WAIT, 5.0, 5.0)};
  EXPECT(!verdict_hangs(between, 2, LIMIT));
  /* ... but when no rank has ended a call within the limit, it hangs. */
  rank_view stuck_outside[] = {at(0, NONE, 3.0, 3.0), at(1, WAIT, 3.0, 3.0)};
  EXPECT(verdict_hangs(stuck_outside, 2, LIMIT));
  rank_view alone[] = {at(1, WAIT, 3.0, 3.0)}; /* an MPI process sees one */
  EXPECT(verdict_hangs(alone, 1, LIMIT));
  rank_view done[] = {at(0, GONE, 0, 0), at(1, WAIT, 3.0, 3.0)};
  EXPECT(verdict_hangs(done, 2, LIMIT));

  /* Blame: a call of its own first, then a rank outside any call for the
   * whole limit, then an NCCL call, then a wait; the longest among equals. */
  EXPECT(blamed(own, 2) == 0);
  rank_view waits_and_nccl[] = {at(0, WAIT, 9, 9), at(1, NCCL, 3, 3)};
  EXPECT(blamed(waits_and_nccl, 2) == 1);
  rank_view outside[] = {at(0, WAIT, 9, 9), at(1, NCCL, 3, 3),
                         at(2, NONE, 3, 3)};
  EXPECT(blamed(outside, 3) == 2);
  rank_view fresh_outside[] = {at(0, WAIT, 9, 9), at(1, NONE, 0.5, 0.5)};
  EXPECT(blamed(fresh_outside, 2) == 0); /* just between two calls */
  rank_view own_beats_outside[] = {at(0, NONE, 9, 9), at(1, OWN, 2.1, 2.1)};
  EXPECT(blamed(own_beats_outside, 2) == 1);
  rank_view two_own[] = {at(0, OWN, 2.5, 2.5), at(1, OWN, 4.0, 4.0),
                         at(2, OWN, 3.0, 3.0)};
  EXPECT(blamed(two_own, 3) == 1);
  rank_view none_suspect[] = {at(0, GONE, 0, 0), at(1, NONE, 0.1, 0.1)};
  EXPECT(blamed(none_suspect, 2) == -1);

  /* On a GPU, NCCL's collectives return once queued: the ranks that
   * queued one wait for the GPU (WAIT), the rank stuck before queuing its
   * own is in the NCCL call (NCCL) and is named, at any position. */
  for (int stuck = 0; stuck < 4; stuck++) {
    rank_view four[4];
    for (int r = 0; r < 4; r++)
      four[r] = r == stuck ? at(r, NCCL, 2.1, 2.1) : at(r, WAIT, 2.2, 2.2);
    EXPECT(blamed(four, 4) == stuck);
  }
  /* Behind the others in the calls all ranks make, whatever it is in: a
   * rank still waiting for the GPU (its collective ran, its host thread
   * is stuck) while the others have moved on into the next NCCL call. */
  rank_view behind[] = {at_seq(0, NCCL, 2.5, 7), at_seq(1, WAIT, 2.1, 6),
                        at_seq(2, NCCL, 2.4, 7)};
  EXPECT(blamed(behind, 3) == 1);
  /* ... but a call of its own comes first, even ahead of the others. */
  rank_view own_ahead[] = {at_seq(0, OWN, 2.1, 7), at_seq(1, WAIT, 3.0, 6)};
  EXPECT(blamed(own_ahead, 2) == 0);
  /* A rank not suspect at all is never named, behind or not. */
  rank_view fresh_behind[] = {at_seq(0, NONE, 0.1, 3), at_seq(1, WAIT, 3.0, 6)};
  EXPECT(blamed(fresh_behind, 2) == 1);

  if (test_failures == 0)
    printf("test_verdict: all checks passed\n");
  return test_failures == 0 ? 0 : 1;
}
