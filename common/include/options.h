/*
 * Command line and environment parsing. Strict: a value is either entirely
 * valid or rejected with a message that names it and the allowed range.
 * The lesson's options are -n and -h (and NTHREADS in the environment);
 * the instruments add theirs through instruments.h.
 */
#ifndef OPTIONS_H
#define OPTIONS_H

#include <stddef.h>

#define DEFAULT_COUNT ((size_t)1024 * 1024) /* floats per rank: 4 MB */
#define NTHREADS_MAX  1024

typedef struct example_options {
  const char *prog; /* program name for messages */
  size_t count;     /* elements per rank (-n/--count) */
} example_options;

enum parse_result { PARSE_OK, PARSE_HELP, PARSE_BAD };

/* Fills opts from argv. On PARSE_HELP the usage went to stdout; on PARSE_BAD
 * a message went to stderr (option_error). `quiet`
 * suppresses all printing (used on MPI ranks other than 0). */
enum parse_result parse_options(int argc, char *argv[], example_options *opts,
                                int quiet);

/* Reports a mistake on the command line, in the one form every such
 * mistake takes: the formatted message (naming the value and what is
 * allowed), then "run 'PROG -h' for the options", on stderr (nothing while
 * parse_options is quiet). Returns PARSE_BAD. */
enum parse_result option_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* Parses a positive decimal integer with no sign, spaces or suffix, at most
 * `max`. Returns 0 and sets *out, or -1 if text is anything else. */
int parse_positive(const char *text, unsigned long long max,
                   unsigned long long *out);

/* Like parse_positive, but 0 (written with any number of zeros) is
 * allowed. */
int parse_count_or_zero(const char *text, unsigned long long max,
                        unsigned long long *out);

/* Parses NTHREADS: 1 .. NTHREADS_MAX. Returns 0 and sets *out, or -1. */
int parse_thread_count(const char *text, int *out);

/* Returns 1 if count floats per rank on nranks ranks (count * nranks * 4
 * bytes, the allgather receive buffer) fit in a size_t, else 0. */
int count_fits(size_t count, int nranks);

#endif
