#include "options.h"

#include "checks.h"
#include "watchdog.h"

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_usage(FILE *out, const char *prog)
{
  fprintf(
      out,
      "Usage: %s [-n COUNT] [--timeout SECONDS] [-h]\n"
      "       %s --bench [-b MIN] [-e MAX] [-f FACTOR] [-w WARMUP] [-i ITERS]\n"
      "              [-r REPEAT] [--csv FILE] [--overlap] [--timeout SECONDS]\n"
      "  -n, --count COUNT  floats per rank (default %zu)\n"
      "  -h, --help         show this help and exit\n"
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
      "  --csv FILE         also write the rows as CSV\n"
      "  --overlap          also time an SGEMM loop running beside the collective\n"
      "Environment (pthread build): NTHREADS=N runs N ranks, one per GPU\n"
      "(default: every visible GPU). MPI build: one rank per process. Ranks\n"
      "may share GPUs with NCCL >= 2.30 and NCCL_MULTI_RANK_GPU_ENABLE=1.\n",
      prog, prog, DEFAULT_COUNT, WATCHDOG_DEFAULT_S, BENCH_DEFAULT_FACTOR,
      BENCH_DEFAULT_WARMUP, BENCH_DEFAULT_ITERS, BENCH_DEFAULT_REPEAT);
}

/* Reports a bad option value; returns PARSE_BAD. */
static enum parse_result bad_value(const example_options *opts, int quiet,
                                   const char *option, const char *value,
                                   const char *allowed)
{
  if (!quiet) {
    print_error("invalid %s '%s': %s\n", option, value, allowed);
    print_usage(stderr, opts->prog);
  }
  return PARSE_BAD;
}

int parse_positive(const char *text, unsigned long long max,
                   unsigned long long *out)
{
  if (text == NULL || text[0] < '0' || text[0] > '9')
    return -1; /* rejects "", "-1", "+1", " 1" */
  char *end = NULL;
  errno = 0;
  unsigned long long value = strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0' || value == 0 || value > max)
    return -1;
  *out = value;
  return 0;
}

/* Like parse_positive, but 0 (written with any number of zeros) is allowed. */
static int parse_count_or_zero(const char *text, unsigned long long max,
                               unsigned long long *out)
{
  if (text != NULL && text[0] == '0' && text[strspn(text, "0")] == '\0') {
    *out = 0;
    return 0;
  }
  return parse_positive(text, max, out);
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
  case 'K':
    shift = 10;
    end++;
    break;
  case 'M':
    shift = 20;
    end++;
    break;
  case 'G':
    shift = 30;
    end++;
    break;
  default: break;
  }
  if (errno != 0 || *end != '\0' || value == 0 || value > (SIZE_MAX >> shift))
    return -1;
  *out = (size_t)value << shift;
  return 0;
}

int parse_thread_count(const char *text, int *out)
{
  unsigned long long value;
  if (parse_positive(text, NTHREADS_MAX, &value) != 0)
    return -1;
  *out = (int)value;
  return 0;
}

int count_fits(size_t count, int nranks)
{
  if (count == 0 || nranks < 1)
    return 0;
  return count <= SIZE_MAX / sizeof(float) / (size_t)nranks;
}

enum parse_result parse_options(int argc, char *argv[], example_options *opts,
                                int quiet)
{
  enum { OPT_BENCH = 1000, OPT_CSV, OPT_OVERLAP, OPT_TIMEOUT };
  int repeat_given = 0; /* -r: checked against -i once both are known */
  static const struct option longopts[] = {
      {"count", required_argument, NULL, 'n'},
      {"help", no_argument, NULL, 'h'},
      {"bench", no_argument, NULL, OPT_BENCH},
      {"csv", required_argument, NULL, OPT_CSV},
      {"overlap", no_argument, NULL, OPT_OVERLAP},
      {"timeout", required_argument, NULL, OPT_TIMEOUT},
      {"repeat", required_argument, NULL, 'r'},
      {NULL, 0, NULL, 0},
  };
  set_program_name(argv[0]);
  *opts = (example_options){
      .prog = path_base_name(argv[0]),
      .count = DEFAULT_COUNT,
      .min_bytes = BENCH_DEFAULT_MIN,
      .max_bytes = BENCH_DEFAULT_MAX,
      .factor = BENCH_DEFAULT_FACTOR,
      .warmup = BENCH_DEFAULT_WARMUP,
      .iters = BENCH_DEFAULT_ITERS,
      .repeat = BENCH_DEFAULT_REPEAT,
      .timeout = WATCHDOG_DEFAULT_S,
  };
  const char *needs_bench = NULL; /* an option that only --bench uses */
  int count_given = 0;            /* -n, which --bench does not use */

  opterr = 0; /* we print our own messages */
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, ":n:hb:e:f:w:i:r:", longopts, NULL)) !=
         -1) {
    unsigned long long value;
    switch (c) {
    case 'n':
      if (parse_positive(optarg, SIZE_MAX / sizeof(float), &value) != 0) {
        if (!quiet)
          print_error("invalid count '%s': use a whole number from 1 to %zu\n",
                      optarg, SIZE_MAX / sizeof(float));
        return PARSE_BAD;
      }
      opts->count = (size_t)value;
      count_given = 1;
      break;
    case 'h':
      if (!quiet)
        print_usage(stdout, opts->prog);
      return PARSE_HELP;
    case OPT_BENCH: opts->bench = 1; break;
    case 'b':
    case 'e':
      if (parse_size(optarg, c == 'b' ? &opts->min_bytes : &opts->max_bytes))
        return bad_value(opts, quiet, c == 'b' ? "-b" : "-e", optarg,
                         "use a size in bytes such as 1024, 64K, 1M or 1G");
      needs_bench = c == 'b' ? "-b" : "-e";
      break;
    case 'f':
      if (parse_positive(optarg, 1024, &value) != 0 || value < 2)
        return bad_value(opts, quiet, "-f", optarg,
                         "use a whole number from 2 to 1024");
      opts->factor = (unsigned)value;
      needs_bench = "-f";
      break;
    case 'w':
      if (parse_count_or_zero(optarg, 1000000, &value) != 0)
        return bad_value(opts, quiet, "-w", optarg,
                         "use a whole number from 0 to 1000000");
      opts->warmup = (int)value;
      needs_bench = "-w";
      break;
    case 'i':
      if (parse_positive(optarg, 1000000, &value) != 0)
        return bad_value(opts, quiet, "-i", optarg,
                         "use a whole number from 1 to 1000000");
      opts->iters = (int)value;
      needs_bench = "-i";
      break;
    case 'r':
      if (parse_positive(optarg, 1000, &value) != 0)
        return bad_value(opts, quiet, "-r", optarg,
                         "use a whole number from 1 to 1000");
      opts->repeat = (int)value;
      repeat_given = 1;
      needs_bench = "-r";
      break;
    case OPT_CSV:
      opts->csv = optarg;
      needs_bench = "--csv";
      break;
    case OPT_TIMEOUT:
      if (parse_count_or_zero(optarg, 86400, &value) != 0)
        return bad_value(opts, quiet, "--timeout", optarg,
                         "use whole seconds from 0 (never) to 86400");
      opts->timeout = (int)value;
      break;
    case OPT_OVERLAP:
      opts->overlap = 1;
      needs_bench = "--overlap";
      break;
    case ':':
      if (!quiet) {
        print_error("option '%s' needs a value\n", argv[optind - 1]);
        print_usage(stderr, opts->prog);
      }
      return PARSE_BAD;
    default:
      if (!quiet) {
        /* A short option (optopt) may sit inside a cluster such as -zq,
         * where optind still names an earlier argument. */
        char short_opt[3] = {'-', (char)optopt, '\0'};
        print_error("unknown option '%s'\n",
                    optopt != 0 ? short_opt : argv[optind - 1]);
        print_usage(stderr, opts->prog);
      }
      return PARSE_BAD;
    }
  }
  if (optind < argc) {
    if (!quiet) {
      print_error("unexpected argument '%s'\n", argv[optind]);
      print_usage(stderr, opts->prog);
    }
    return PARSE_BAD;
  }
  if (!opts->bench && needs_bench != NULL) {
    if (!quiet) {
      print_error("option '%s' only works with --bench\n", needs_bench);
      print_usage(stderr, opts->prog);
    }
    return PARSE_BAD;
  }
  if (opts->bench && count_given) {
    if (!quiet) {
      print_error("option '-n' does not apply to --bench, which measures"
                  " the sizes from -b to -e\n");
      print_usage(stderr, opts->prog);
    }
    return PARSE_BAD;
  }
  if (!repeat_given && opts->repeat > opts->iters)
    opts->repeat = opts->iters; /* the default fits what -i allows */
  if (opts->repeat > opts->iters) {
    if (!quiet)
      print_error("-r %d is more than -i %d: each of the %d timed loops needs"
                  " at least one operation\n",
                  opts->repeat, opts->iters, opts->repeat);
    return PARSE_BAD;
  }
  if (opts->min_bytes > opts->max_bytes) {
    if (!quiet)
      print_error("-b %zu is larger than -e %zu: the smallest size must not"
                  " exceed the largest\n",
                  opts->min_bytes, opts->max_bytes);
    return PARSE_BAD;
  }
  return PARSE_OK;
}
