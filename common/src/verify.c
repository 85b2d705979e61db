#include "verify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "checks.h"
#include "output.h"

void fill_floats(float *values, size_t n, float value)
{
  for (size_t i = 0; i < n; i++)
    values[i] = value;
}

size_t count_mismatches(const float *values, size_t n, float expected,
                        size_t *first_bad)
{
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    /* Written as !(close) so that NaN counts as a mismatch. */
    if (!(fabsf(values[i] - expected) <= VERIFY_TOLERANCE)) {
      if (bad == 0)
        *first_bad = i;
      bad++;
    }
  }
  return bad;
}

/* Prints the combined outcome on rank 0 and returns it on every rank. */
static int combine_outcome(const rank_ctx *ctx, int ok)
{
  int all_ok = all_ranks_ok(ctx, ok);
  print_root(ctx, all_ok ? "Results verified correctly\n"
                         : "Results verification failed\n");
  /* And one line on stderr naming the wrong ranks, for whoever reads only
   * that. */
  int *oks =
      ctx->rank == 0 ? host_calloc((size_t)ctx->nranks, sizeof *oks) : NULL;
  all_ranks_gather(ctx, &ok, sizeof ok, oks);
  if (ctx->rank == 0 && !all_ok) {
    char ranks[ALL_RANKS_GATHER_MAX] = "";
    size_t len = 0;
    int wrong = 0;
    for (int r = 0; r < ctx->nranks && len + 16 < sizeof ranks; r++)
      if (!oks[r])
        len += (size_t)snprintf(ranks + len, sizeof ranks - len, "%s%d",
                                wrong++ ? ", " : "", r);
    print_error("wrong result on rank%s %s (see stdout)\n",
                wrong > 1 ? "s" : "", ranks);
  }
  free(oks);
  return all_ok;
}

int verify_allreduce(const rank_ctx *ctx, const float *result, size_t count,
                     float expected)
{
  print_root(ctx, "Verification - Expected: %.1f, Got: %.1f\n", expected,
             result[0]);
  size_t first = 0;
  size_t bad = count_mismatches(result, count, expected, &first);
  char line[ALL_RANKS_GATHER_MAX] = "";
  if (bad > 0)
    snprintf(line, sizeof line,
             "  Rank %d: %zu of %zu elements wrong; first at index %zu:"
             " Expected %.1f, Got %.1f\n",
             ctx->rank, bad, count, first, expected, result[first]);
  all_ranks_print_line(ctx, line);
  return combine_outcome(ctx, bad == 0);
}

int verify_allgather_segments(const rank_ctx *ctx, const float *result,
                              size_t count)
{
  size_t bad = 0, first_index = 0;
  int first_segment = -1;
  for (int r = 0; r < ctx->nranks; r++) {
    const float *segment = result + (size_t)r * count;
    print_root(ctx, "Verification - Segment %d: Expected: %.1f, Got: %.1f\n", r,
               (float)r, segment[0]);
    size_t first = 0;
    size_t seg_bad = count_mismatches(segment, count, (float)r, &first);
    if (seg_bad > 0 && first_segment < 0) {
      first_segment = r;
      first_index = first;
    }
    bad += seg_bad;
  }
  char line[ALL_RANKS_GATHER_MAX] = "";
  if (bad > 0)
    snprintf(line, sizeof line,
             "  Rank %d: %zu of %zu elements wrong; first in segment %d at"
             " index %zu: Expected %.1f, Got %.1f\n",
             ctx->rank, bad, count * (size_t)ctx->nranks, first_segment,
             first_index, (float)first_segment,
             result[(size_t)first_segment * count + first_index]);
  all_ranks_print_line(ctx, line);
  return combine_outcome(ctx, bad == 0);
}
