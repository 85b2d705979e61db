/*
 * The instruments' options, parsed by parse_options (common/) through
 * instruments.h, the same in every rank of a process: --timeout for the
 * watchdog, --bench and its sizes, loops and outputs.
 */
#ifndef INSTRUMENT_OPTIONS_H
#define INSTRUMENT_OPTIONS_H

#include <stddef.h>

typedef struct instrument_options {
  int timeout; /* --timeout S: the watchdog's limit, 0: none */

  /* --bench: measure over a range of message sizes (src/bench/) */
  int bench;
  size_t min_bytes, max_bytes; /* -b, -e: message sizes, bytes */
  unsigned factor;             /* -f: next size = size * factor */
  int warmup, iters;           /* -w, -i: operations per size and mode */
  int repeat;                  /* -r: the -i operations in this many loops */
  const char *csv;             /* --csv FILE: rows also as CSV */
  int overlap;                 /* --overlap: SGEMM beside the collective */
  int graph;                   /* --graph: also time loops replayed from a
                                  CUDA graph */
  int cold;                    /* --cold: each operation on the next part of
                                  the buffers (as nccl-tests does), so that
                                  no operation finds its data in the L2 */
} instrument_options;

#define BENCH_DEFAULT_MIN    ((size_t)1 << 10)
#define BENCH_DEFAULT_MAX    ((size_t)1 << 30)
#define BENCH_DEFAULT_FACTOR 4
#define BENCH_DEFAULT_WARMUP 20
#define BENCH_DEFAULT_ITERS  100
#define BENCH_DEFAULT_REPEAT 5

/* The options as parsed (the defaults before). */
const instrument_options *instrument_opts(void);

/* Parses a size in bytes: a positive whole number with an optional K, M or G
 * suffix (powers of 1024), e.g. "64K". Returns 0 and sets *out, or -1. */
int parse_size(const char *text, size_t *out);

#endif
