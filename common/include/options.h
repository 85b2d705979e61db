/*
 * Command line and environment parsing. Strict: a value is either entirely
 * valid or rejected with a message that names it and the allowed range.
 */
#ifndef OPTIONS_H
#define OPTIONS_H

#include <stddef.h>

#define DEFAULT_COUNT ((size_t)1024 * 1024) /* floats per rank: 4 MB */
#define NTHREADS_MAX  1024

typedef struct example_options {
  const char *prog; /* program name for messages */
  size_t count;     /* elements per rank (-n/--count) */

  /* --bench: measure over a range of message sizes (common/src/bench/) */
  int bench;
  size_t min_bytes, max_bytes; /* -b, -e: message sizes, bytes */
  unsigned factor;             /* -f: next size = size * factor */
  int warmup, iters;           /* -w, -i: operations per size and mode */
  int repeat;                  /* -r: the -i operations in this many loops */
  const char *csv;             /* --csv FILE: rows also as CSV */
  int overlap;                 /* --overlap: SGEMM beside the collective */
  int timeout;                 /* --timeout S: the watchdog's limit, 0: none */
} example_options;

#define BENCH_DEFAULT_MIN    ((size_t)1 << 10)
#define BENCH_DEFAULT_MAX    ((size_t)1 << 30)
#define BENCH_DEFAULT_FACTOR 4
#define BENCH_DEFAULT_WARMUP 20
#define BENCH_DEFAULT_ITERS  100
#define BENCH_DEFAULT_REPEAT 5

enum parse_result { PARSE_OK, PARSE_HELP, PARSE_BAD };

/* Fills opts from argv. On PARSE_HELP the usage went to stdout; on PARSE_BAD
 * a message and the usage went to stderr. `quiet` suppresses all printing
 * (used on MPI ranks other than 0). */
enum parse_result parse_options(int argc, char *argv[], example_options *opts,
                                int quiet);

/* Parses a positive decimal integer with no sign, spaces or suffix, at most
 * `max`. Returns 0 and sets *out, or -1 if text is anything else. */
int parse_positive(const char *text, unsigned long long max,
                   unsigned long long *out);

/* Parses a size in bytes: a positive whole number with an optional K, M or G
 * suffix (powers of 1024), e.g. "64K". Returns 0 and sets *out, or -1. */
int parse_size(const char *text, size_t *out);

/* Parses NTHREADS: 1 .. NTHREADS_MAX. Returns 0 and sets *out, or -1. */
int parse_thread_count(const char *text, int *out);

/* Returns 1 if count floats per rank on nranks ranks (count * nranks * 4
 * bytes, the allgather receive buffer) fit in a size_t, else 0. */
int count_fits(size_t count, int nranks);

#endif
