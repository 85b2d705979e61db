/* The instruments' options (instrument_options.h), handed over one by one
 * by parse_options (common/src/options.c) through instruments.h. */
#include "instrument_options.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "instruments.h"
#include "options.h"
#include "watchdog.h"

enum { OPT_BENCH = 1000, OPT_CSV, OPT_OVERLAP, OPT_TIMEOUT, OPT_GRAPH, OPT_COLD };

static const struct option long_options[] = {
    {"bench", no_argument, NULL, OPT_BENCH},
    {"csv", required_argument, NULL, OPT_CSV},
    {"overlap", no_argument, NULL, OPT_OVERLAP},
    {"graph", no_argument, NULL, OPT_GRAPH},
    {"cold", no_argument, NULL, OPT_COLD},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"repeat", required_argument, NULL, 'r'},
    {NULL, 0, NULL, 0},
};

#define DEFAULTS                                                               \
  {                                                                            \
      .timeout = WATCHDOG_DEFAULT_S,                                           \
      .min_bytes = BENCH_DEFAULT_MIN,                                          \
      .max_bytes = BENCH_DEFAULT_MAX,                                          \
      .factor = BENCH_DEFAULT_FACTOR,                                          \
      .warmup = BENCH_DEFAULT_WARMUP,                                          \
      .iters = BENCH_DEFAULT_ITERS,                                            \
      .repeat = BENCH_DEFAULT_REPEAT,                                          \
  }
static instrument_options opts = DEFAULTS;
static const char *needs_bench; /* the last option given that only --bench
                                   uses */
static int repeat_given;        /* -r: checked against -i at the end */

const instrument_options *instrument_opts(void) { return &opts; }

static void reset(void)
{
  opts = (instrument_options)DEFAULTS;
  needs_bench = NULL;
  repeat_given = 0;
}

static void usage(FILE *out, const char *prog, enum usage_part part)
{
  switch (part) {
  case USAGE_SYNOPSIS_OPTIONS: fprintf(out, " [--timeout SECONDS]"); break;
  case USAGE_SYNOPSIS_LINES:
    fprintf(out,
            "       %s --bench [-b MIN] [-e MAX] [-f FACTOR] [-w WARMUP] [-i ITERS]\n"
            "              [-r REPEAT] [--graph] [--cold] [--csv FILE] [--overlap]\n"
            "              [--timeout SECONDS]\n",
            prog);
    break;
  case USAGE_OPTION_LINES:
    fprintf(
        out,
        "  --timeout SECONDS  end the job (exit 3) when one call has not\n"
        "                     returned after this long (default %d; 0: never)\n"
        "  --bench            measure instead: time, bandwidth and engine per\n"
        "                     message size, with and without symmetric windows\n"
        "  -b, -e SIZE        smallest and largest message in bytes, K/M/G\n"
        "                     suffixes allowed (default 1K and 1G)\n"
        "  -f FACTOR          size step, at least 2 (default %d)\n"
        "  -w, -i N           warm-up and timed operations per size (default %d, %d)\n"
        "  -r, --repeat R     time the -i operations as R loops: the median loop\n"
        "                     and the spread of all (default %d, at most -i)\n"
        "  --graph            also time each loop replayed from a CUDA graph\n"
        "                     (no host launch per operation), beside the eager time\n"
        "  --cold             each operation on the next part of the buffers, as\n"
        "                     nccl-tests does: no operation finds its data in the L2\n"
        "  --csv FILE         also write the rows as CSV\n"
        "  --overlap          also time an SGEMM loop running beside the collective\n",
        WATCHDOG_DEFAULT_S, BENCH_DEFAULT_FACTOR, BENCH_DEFAULT_WARMUP,
        BENCH_DEFAULT_ITERS, BENCH_DEFAULT_REPEAT);
    break;
  }
}

int parse_size(const char *text, size_t *out)
{
  if (text == NULL || text[0] < '0' || text[0] > '9')
    return -1;
  char *end = NULL;
  errno = 0;
  unsigned long long value = strtoull(text, &end, 10);
  unsigned shift = 0;
  switch (*end) {
  case 'K': shift = 10; break;
  case 'M': shift = 20; break;
  case 'G': shift = 30; break;
  default: break;
  }
  if (shift != 0)
    end++;
  if (errno != 0 || *end != '\0' || value == 0 || value > (SIZE_MAX >> shift))
    return -1;
  *out = (size_t)value << shift;
  return 0;
}

/* A bad value: the message names it and what is allowed. */
static int bad_value(const char *option, const char *value, const char *allowed)
{
  return option_error("invalid %s '%s': %s\n", option, value, allowed);
}

/* A whole number from `min` to `max` for `option`, into *out. */
static int whole_number(const char *option, const char *value,
                        unsigned long long min, unsigned long long max,
                        int *out)
{
  unsigned long long v = 0;
  int bad = min == 0 ? parse_count_or_zero(value, max, &v)
                     : parse_positive(value, max, &v) != 0 || v < min;
  if (bad) {
    char allowed[80];
    snprintf(allowed, sizeof allowed, "use a whole number from %llu to %llu",
             min, max);
    return bad_value(option, value, allowed);
  }
  *out = (int)v;
  return PARSE_OK;
}

static int parse(int c, const char *value)
{
  int factor = 0, r = PARSE_OK;
  switch (c) {
  case OPT_TIMEOUT: {
    unsigned long long seconds = 0;
    if (parse_count_or_zero(value, 86400, &seconds) != 0)
      return bad_value("--timeout", value,
                       "use whole seconds from 0 (never) to 86400");
    opts.timeout = (int)seconds;
    return PARSE_OK;
  }
  case OPT_BENCH: opts.bench = 1; return PARSE_OK;
  case 'b':
  case 'e':
    needs_bench = c == 'b' ? "-b" : "-e";
    if (parse_size(value, c == 'b' ? &opts.min_bytes : &opts.max_bytes))
      return bad_value(needs_bench, value,
                       "use a size in bytes such as 1024, 64K, 1M or 1G");
    return PARSE_OK;
  case 'f':
    r = whole_number("-f", value, 2, 1024, &factor);
    opts.factor = (unsigned)factor;
    needs_bench = "-f";
    return r;
  case 'w': needs_bench = "-w"; return whole_number("-w", value, 0, 1000000, &opts.warmup);
  case 'i': needs_bench = "-i"; return whole_number("-i", value, 1, 1000000, &opts.iters);
  case 'r':
    repeat_given = 1;
    needs_bench = "-r";
    return whole_number("-r", value, 1, 1000, &opts.repeat);
  case OPT_CSV: opts.csv = value; needs_bench = "--csv"; return PARSE_OK;
  case OPT_OVERLAP: opts.overlap = 1; needs_bench = "--overlap"; return PARSE_OK;
  case OPT_GRAPH: opts.graph = 1; needs_bench = "--graph"; return PARSE_OK;
  case OPT_COLD: opts.cold = 1; needs_bench = "--cold"; return PARSE_OK;
  default: /* getopt gives only the options of the tables above */
    return option_error("unknown option '%c'\n", c);
  }
}

static int check(int count_given)
{
  if (!opts.bench && needs_bench != NULL)
    return option_error("option '%s' only works with --bench\n",
                        needs_bench);
  if (opts.bench && count_given)
    return option_error("option '-n' does not apply to --bench, which"
                           " measures the sizes from -b to -e\n");
  if (!repeat_given && opts.repeat > opts.iters)
    opts.repeat = opts.iters; /* the default fits what -i allows */
  if (opts.repeat > opts.iters)
    return option_error("-r %d is more than -i %d: each of the %d timed"
                           " loops needs at least one operation\n",
                        opts.repeat, opts.iters, opts.repeat);
  if (opts.min_bytes > opts.max_bytes)
    return option_error("-b %zu is larger than -e %zu: the smallest size"
                           " must not exceed the largest\n",
                        opts.min_bytes, opts.max_bytes);
  return PARSE_OK;
}

static int values(unsigned long long *values, int max)
{
  const unsigned long long mine[] = {
      opts.bench,  opts.min_bytes, opts.max_bytes,     opts.factor,
      opts.warmup, opts.iters,     opts.overlap,       opts.csv != NULL,
      opts.timeout, opts.repeat,   opts.graph,         opts.cold};
  int n = 0;
  for (; n < max && n < (int)(sizeof mine / sizeof mine[0]); n++)
    values[n] = mine[n];
  return n;
}

const instruments_option_set instruments_options = {
    "b:e:f:w:i:r:", long_options, reset, parse, check, values, usage};
