/* The bench's numbers from its loops (instruments/src/bench/timing.c), from
 * their definitions: the slowest rank's value reaches rank 0 wherever that
 * rank is; the median, spread and coefficient of variation of the loops.
 * Ranks are threads (run_ranks); no GPU is used. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../instruments/src/bench/bench_impl.h"
#include "bootstrap.h"
#include "test_util.h"

#define NEAR(x, want) (fabs((x) - (double)(want)) <= 1e-9 * (1 + fabs((double)(want))))

/* Each round, one rank (round % nranks) holds the largest value. */
static int each_rank_slowest(const rank_ctx *ctx)
{
  int failures = 0;
  for (int round = 0; round < 2 * ctx->nranks; round++) {
    const int slow = round % ctx->nranks;
    double mine = ctx->rank == slow ? 100.0 + round : 1.0 + ctx->rank;
    double got = slowest(ctx, mine);
    if (ctx->rank == 0 && got != 100.0 + round) {
      fprintf(stderr, "%d ranks, rank %d slowest: rank 0 got %g, wanted %g\n",
              ctx->nranks, slow, got, 100.0 + round);
      failures++;
    }
  }
  return all_ranks_max(ctx, failures) == 0 ? 0 : 1;
}

int main(void)
{
  example_options opts = {.prog = "test_timing", .count = 1};
  for (int n = 1; n <= 5; n++)
    EXPECT(run_ranks(n, n, &opts, each_rank_slowest, NULL) == 0);

  double odd[] = {5, 1, 3};
  EXPECT(median_of(odd, 3) == 3);
  double even[] = {4, 1, 3, 10};
  EXPECT(median_of(even, 4) == 3.5);
  EXPECT(NEAR(spread_pct(4, 2, 6), 100));
  EXPECT(spread_pct(0, 0, 0) == 0);
  double two[] = {1, 3}; /* mean 2, sample deviation sqrt(2) */
  EXPECT(NEAR(cv_pct(two, 2), 100 * sqrt(2) / 2));
  double one[] = {7};
  EXPECT(isnan(cv_pct(one, 1)));

  /* loops_of: the median, fastest, slowest; the text in the order run. */
  double us[] = {30, 10, 20};
  loops l = loops_of(us, 3);
  EXPECT(l.us == 20 && l.us_min == 10 && l.us_max == 30);
  EXPECT(strcmp(l.text, "30.000;10.000;20.000") == 0);
  EXPECT(NEAR(l.cv, 50)); /* mean 20, sample deviation 10 */

  if (test_failures)
    return 1;
  printf("timing: all passed\n");
  return 0;
}
