/*
 * Result verification. Every rank checks every element of its own result;
 * the outcome is combined across ranks so that every process agrees on the
 * exit status.
 */
#ifndef VERIFY_H
#define VERIFY_H

#include <stddef.h>

#include "bootstrap.h"

#define VERIFY_TOLERANCE 1e-3f

/* Sets n floats to value. */
void fill_floats(float *values, size_t n, float value);

/* Returns how many of values[0..n) differ from expected by more than
 * VERIFY_TOLERANCE (NaN always differs). If any do, *first_bad is the index
 * of the first; otherwise it is left alone. Cannot fail. */
size_t count_mismatches(const float *values, size_t n, float expected,
                        size_t *first_bad);

/* Collective. Checks an AllReduce result: all `count` elements must equal
 * `expected`. Rank 0 prints "Verification - Expected: E, Got: G" (its own
 * element 0); each wrong rank reports its first mismatch and mismatch count;
 * then "Results verified correctly" or "Results verification failed".
 * Returns 1 on every rank if every rank's result is right, else 0. */
int verify_allreduce(const rank_ctx *ctx, const float *result, size_t count,
                     float expected);

/* Collective. Checks an AllGather result of nranks segments of `count`
 * elements: segment r must hold the value r everywhere. Rank 0 prints one
 * "Verification - Segment r: Expected: r, Got: G" line per segment; the rest
 * as verify_allreduce. Returns 1 on every rank if all are right, else 0. */
int verify_allgather_segments(const rank_ctx *ctx, const float *result,
                              size_t count);

/* The value rank `rank` puts at element i of an AllReduce that checks more
 * than a constant can: (rank + 1) + 16 * (i mod 251). Every rank's part
 * changes every sum, and a sum of the wrong element (one vector or a few
 * away) is another number; sums of up to 8 ranks are exact in float.
 * Cannot fail. */
float pattern_value(int rank, size_t i);

/* Sets values[i] = pattern_value(rank, i) for i in [0, n). */
void fill_pattern(float *values, size_t n, int rank);

/* Returns how many of result[0..count) differ from the sum over nranks
 * ranks of pattern_value (first_bad as count_mismatches). Cannot fail. */
size_t count_pattern_mismatches(const float *result, size_t count, int nranks,
                                size_t *first_bad);

/* Collective. Checks an AllReduce of fill_pattern's values, printing as
 * verify_allreduce does (element 0's expected value and what came).
 * Returns 1 on every rank if every rank's result is right, else 0. */
int verify_allreduce_pattern(const rank_ctx *ctx, const float *result,
                             size_t count);

/* Collective. The same check, said in one line on rank 0: "  WHAT:
 * verified", or each wrong rank's first mismatch and then "  WHAT: wrong".
 * Returns 1 on every rank if every rank's result is right, else 0. */
int check_allreduce_pattern(const rank_ctx *ctx, const char *what,
                            const float *result, size_t count);

#endif
