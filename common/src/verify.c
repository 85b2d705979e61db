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

/* Collective: one line on stderr (rank 0) naming the ranks whose `ok` is
 * 0, after `what` if not NULL, for whoever reads only stderr. */
static void say_wrong_ranks(const rank_ctx *ctx, int ok, int all_ok,
                            const char *what)
{
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
    print_error("%s%swrong result on rank%s %s (see stdout)\n",
                what ? what : "", what ? ": " : "", wrong > 1 ? "s" : "",
                ranks);
  }
  free(oks);
}

/* Prints the combined outcome on rank 0 and returns it on every rank. */
static int combine_outcome(const rank_ctx *ctx, int ok)
{
  int all_ok = all_ranks_ok(ctx, ok);
  print_root(ctx, all_ok ? "Results verified correctly\n"
                         : "Results verification failed\n");
  say_wrong_ranks(ctx, ok, all_ok, NULL);
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

float pattern_value(int rank, size_t i)
{
  return (float)(rank + 1) + 16.0f * (float)(i % 251);
}

void fill_pattern(float *values, size_t n, int rank)
{
  for (size_t i = 0; i < n; i++)
    values[i] = pattern_value(rank, i);
}

/* The sum over nranks ranks of pattern_value(r, i), from its formula. */
static float pattern_sum(int nranks, size_t i)
{
  return (float)nranks * (float)(nranks + 1) / 2 +
         16.0f * (float)nranks * (float)(i % 251);
}

size_t count_pattern_mismatches(const float *result, size_t count, int nranks,
                                size_t *first_bad)
{
  size_t bad = 0;
  for (size_t i = 0; i < count; i++)
    if (!(fabsf(result[i] - pattern_sum(nranks, i)) <= VERIFY_TOLERANCE) &&
        bad++ == 0)
      *first_bad = i;
  return bad;
}

/* This rank's line about a wrong pattern result, or "" if it is right. */
static void pattern_line(const rank_ctx *ctx, const float *result,
                         size_t count, char *line, size_t size)
{
  size_t first = 0;
  size_t bad = count_pattern_mismatches(result, count, ctx->nranks, &first);
  line[0] = '\0';
  if (bad > 0)
    snprintf(line, size,
             "  Rank %d: %zu of %zu elements wrong; first at index %zu:"
             " Expected %.1f, Got %.1f\n",
             ctx->rank, bad, count, first, pattern_sum(ctx->nranks, first),
             result[first]);
}

int verify_allreduce_pattern(const rank_ctx *ctx, const float *result,
                             size_t count)
{
  if (count > 0)
    print_root(ctx, "Verification - Expected: %.1f, Got: %.1f\n",
               pattern_sum(ctx->nranks, 0), result[0]);
  char line[ALL_RANKS_GATHER_MAX];
  pattern_line(ctx, result, count, line, sizeof line);
  all_ranks_print_line(ctx, line);
  return combine_outcome(ctx, line[0] == '\0');
}

int check_allreduce_pattern(const rank_ctx *ctx, const char *what,
                            const float *result, size_t count)
{
  char line[ALL_RANKS_GATHER_MAX];
  pattern_line(ctx, result, count, line, sizeof line);
  all_ranks_print_line(ctx, line);
  int all_ok = all_ranks_ok(ctx, line[0] == '\0');
  print_root(ctx, "  %s: %s\n", what, all_ok ? "verified" : "wrong");
  say_wrong_ranks(ctx, line[0] == '\0', all_ok, what);
  return all_ok;
}
