/* Verification helpers on hand-made good and bad buffers, including the
 * collective verify_* calls on 3 thread ranks. */
#include <math.h>
#include <stdlib.h>

#include "bootstrap.h"
#include "test_util.h"
#include "verify.h"

#define N 1000

static void check_count_mismatches(void)
{
  float buf[N];
  size_t first = 12345;
  fill_floats(buf, N, 6.0f);
  EXPECT(count_mismatches(buf, N, 6.0f, &first) == 0 && first == 12345);

  buf[0] = 7.0f; /* the element the original never checked */
  EXPECT(count_mismatches(buf, N, 6.0f, &first) == 1 && first == 0);
  buf[0] = 6.0f;
  buf[N - 1] = 5.0f;
  EXPECT(count_mismatches(buf, N, 6.0f, &first) == 1 && first == N - 1);
  buf[500] = NAN;
  EXPECT(count_mismatches(buf, N, 6.0f, &first) == 2 && first == 500);
  fill_floats(buf, N, 6.0f);
  buf[3] = 6.0f + 0.0009f; /* inside the 1e-3 tolerance */
  EXPECT(count_mismatches(buf, N, 6.0f, &first) == 0);
  buf[4] = 6.0f - 0.002f; /* outside */
  EXPECT(count_mismatches(buf, N, 6.0f, &first) == 1 && first == 4);
  buf[5] = INFINITY;
  EXPECT(count_mismatches(buf, N, 6.0f, &first) == 2 && first == 4);
}

/* Rank `bad_rank` corrupts element `bad_index` of its result; every rank must
 * agree on the outcome. */
static int bad_rank = -1;
static size_t bad_index;

static int allreduce_case(const rank_ctx *ctx)
{
  float *result = malloc(N * sizeof(float));
  fill_floats(result, N, 3.0f);
  if (ctx->rank == bad_rank)
    result[bad_index] = -1.0f;
  int ok = verify_allreduce(ctx, result, N, 3.0f);
  free(result);
  return ok ? 0 : 1; /* status 1 on every rank when any rank is wrong */
}

static int allgather_case(const rank_ctx *ctx)
{
  float *result = malloc((size_t)N * ctx->nranks * sizeof(float));
  for (int r = 0; r < ctx->nranks; r++)
    fill_floats(result + (size_t)r * N, N, (float)r);
  if (ctx->rank == bad_rank)
    result[bad_index] += 0.5f;
  int ok = verify_allgather_segments(ctx, result, N);
  free(result);
  return ok ? 0 : 1;
}

int main(void)
{
  check_count_mismatches();
  example_options opts = {.prog = "test_verify", .count = N};

  bad_rank = -1;
  EXPECT(run_ranks(3, 3, &opts, allreduce_case, NULL) == 0);
  EXPECT(run_ranks(3, 3, &opts, allgather_case, NULL) == 0);
  for (int r = 0; r < 3; r++) {
    bad_rank = r;
    bad_index = 0;
    EXPECT(run_ranks(3, 3, &opts, allreduce_case, NULL) == 1);
    bad_index = N - 1;
    EXPECT(run_ranks(3, 3, &opts, allreduce_case, NULL) == 1);
    bad_index = (size_t)N * 2 + 17; /* segment 2 */
    EXPECT(run_ranks(3, 3, &opts, allgather_case, NULL) == 1);
    bad_index = 0; /* segment 0, element 0 */
    EXPECT(run_ranks(3, 3, &opts, allgather_case, NULL) == 1);
  }
  if (test_failures == 0)
    printf("test_verify: all checks passed\n");
  return test_failures == 0 ? 0 : 1;
}
