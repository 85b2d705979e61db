/*
 * --bench: instead of demonstrating the collective once, measure it over a
 * range of message sizes, side by side with and without symmetric windows
 * (and, for the AllGather, with the copy-engine policy), against a copy
 * bandwidth measured in the same run. See the README's "Measure" section.
 */
#ifndef BENCH_H
#define BENCH_H

#include "bootstrap.h"

/* Collective: runs the benchmark on every rank; rank 0 prints the table
 * (and writes --csv). Returns EXIT_SUCCESS, or EXIT_FAILURE if any result was
 * wrong or the CSV file could not be written. CUDA/NCCL failures end the job
 * like everywhere else. */
int run_bench(const rank_ctx *ctx, const example_desc *example);

#endif
