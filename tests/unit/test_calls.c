/* Which call a rank is in (instruments/src/calls.c), as the watchdog reads
 * it: nested calls name the innermost, a wait for the GPU after queued
 * NCCL collectives is a wait for the other ranks, and the count of calls
 * all ranks make. Expected values from calls.h's definitions. */
#include <string.h>

#include "calls.h"
#include "instruments.h"
#include "test_util.h"
#include "verdict.h"

static char text[160];
static double ms, idle;
static unsigned long seq;

/* Rank 0's state now; `text` and `seq` hold the rest. */
static int state(void)
{
  return call_in_progress(0, text, sizeof text, &ms, &idle, &seq);
}

int main(void)
{
  EXPECT(state() == CALL_GONE); /* no thread runs rank 0 yet */
  watch_rank(0);
  EXPECT(state() == CALL_NONE && seq == 0);

  /* Nested calls: the innermost is named, the outer one again after it. */
  watch_begin("cudaMalloc(&p, n)", "dir/outer.c", 10);
  EXPECT(state() == CALL_OWN && strcmp(text, "cudaMalloc(&p, n) (outer.c:10)") == 0);
  watch_begin("ncclCommInitRank(&comm, 2, id, 0)", "inner.c", 20);
  EXPECT(state() == CALL_NCCL && seq == 1 &&
         strcmp(text, "ncclCommInitRank(&comm, 2, id, 0) (inner.c:20)") == 0);
  watch_end();
  EXPECT(state() == CALL_OWN && strcmp(text, "cudaMalloc(&p, n) (outer.c:10)") == 0);
  watch_end();
  EXPECT(state() == CALL_NONE);

  /* Deeper than the four it keeps: the fourth is named until it ends. */
  const char *calls[] = {"c1()", "c2()", "c3()", "c4()", "c5()"};
  for (int i = 0; i < 5; i++)
    watch_begin(calls[i], "deep.c", i + 1);
  EXPECT(state() == CALL_OWN && strcmp(text, "c4() (deep.c:4)") == 0);
  watch_end(); /* c5 */
  EXPECT(state() == CALL_OWN && strcmp(text, "c4() (deep.c:4)") == 0);
  watch_end(); /* c4 */
  EXPECT(state() == CALL_OWN && strcmp(text, "c3() (deep.c:3)") == 0);
  for (int i = 0; i < 3; i++)
    watch_end();
  EXPECT(state() == CALL_NONE);
  watch_end(); /* one end too many: still in no call, and calls go on */
  EXPECT(state() == CALL_NONE);
  watch_begin("cudaFree(p)", "f.c", 1);
  EXPECT(state() == CALL_OWN && strcmp(text, "cudaFree(p) (f.c:1)") == 0);
  watch_end();

  /* NCCL returns once a collective is queued: the next wait for the GPU
   * waits for the other ranks; the one after it is the rank's own. */
  unsigned long before = (state(), seq);
  watch_begin("ncclAllReduce(s, r, n, ncclFloat, ncclSum, comm, st)", "c.c", 5);
  EXPECT(state() == CALL_NCCL && seq == before + 1);
  watch_end();
  watch_begin("cudaMemcpyAsync(h, d, n, k, st)", "c.c", 6); /* no wait */
  EXPECT(state() == CALL_OWN);
  watch_end();
  watch_begin("cudaStreamSynchronize(st)", "c.c", 7);
  EXPECT(state() == CALL_WAIT && seq == before + 1);
  watch_end();
  watch_begin("cudaStreamSynchronize(st)", "c.c", 8);
  EXPECT(state() == CALL_OWN);
  watch_end();
  /* A collective queued inside another call counts too. */
  watch_begin("helper()", "c.c", 9);
  watch_begin("ncclAllGather(s, r, n, ncclFloat, comm, st)", "c.c", 10);
  watch_end();
  watch_end();
  watch_begin("cudaEventSynchronize(ev)", "c.c", 11);
  EXPECT(state() == CALL_WAIT);
  watch_end();

  /* A transport's collective is a wait for the others, and counts. */
  before = (state(), seq);
  watch_begin_wait("util_broadcast(...)", "t.c", 3);
  EXPECT(state() == CALL_WAIT && seq == before + 1);
  watch_end();

  watch_rank(-1); /* the thread gives the rank up */
  EXPECT(state() == CALL_GONE);
  if (test_failures)
    return 1;
  printf("calls: all passed\n");
  return 0;
}
