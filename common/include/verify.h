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

#endif
