#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"
#include "instruments.h"

static const char *usage_prog = "nccl-example"; /* set by parse_options */
static int quiet;                                /* nothing is printed */

static void print_usage(FILE *out)
{
  const char *prog = usage_prog;
  fprintf(out, "Usage: %s [-n COUNT]", prog);
  instruments_options.usage(out, prog, USAGE_SYNOPSIS_OPTIONS);
  fprintf(out, " [-h]\n");
  instruments_options.usage(out, prog, USAGE_SYNOPSIS_LINES);
  fprintf(out,
          "  -n, --count COUNT  floats per rank (default %zu)\n"
          "  -h, --help         show this help and exit\n",
          DEFAULT_COUNT);
  instruments_options.usage(out, prog, USAGE_OPTION_LINES);
  fprintf(out,
          "Environment (pthread build): NTHREADS=N runs N ranks, one per GPU\n"
          "(default: every visible GPU). MPI build: one rank per process. Ranks\n"
          "may share GPUs with NCCL >= 2.30 and NCCL_MULTI_RANK_GPU_ENABLE=1.\n");
}

enum parse_result option_error(const char *fmt, ...)
{
  if (quiet)
    return PARSE_BAD;
  va_list ap;
  va_start(ap, fmt);
  int len = vsnprintf(NULL, 0, fmt, ap); /* a value may be long */
  va_end(ap);
  char *text = host_calloc((size_t)(len > 0 ? len : 0) + 1, 1);
  va_start(ap, fmt);
  vsnprintf(text, (size_t)(len > 0 ? len : 0) + 1, fmt, ap);
  va_end(ap);
  /* One write, so that the two lines stay together. */
  print_error("%s%s: run '%s -h' for the options\n", text, usage_prog,
              usage_prog);
  free(text);
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

int parse_count_or_zero(const char *text, unsigned long long max,
                        unsigned long long *out)
{
  if (text == NULL || text[0] != '0' || text[strspn(text, "0")] != '\0')
    return parse_positive(text, max, out);
  *out = 0; /* "0", "00", ... */
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
  return count > 0 && nranks >= 1 &&
         count <= SIZE_MAX / sizeof(float) / (size_t)nranks;
}

/* getopt's tables: the lesson's options, then the instruments'. */
#define MAX_LONG_OPTIONS 16
static void option_tables(char *shorts, size_t size, struct option *longs)
{
  static const struct option mine[] = {
      {"count", required_argument, NULL, 'n'},
      {"help", no_argument, NULL, 'h'},
  };
  snprintf(shorts, size, ":n:h%s", instruments_options.short_options);
  int n = 0;
  for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++)
    longs[n++] = mine[i];
  for (const struct option *o = instruments_options.long_options;
       o->name != NULL && n < MAX_LONG_OPTIONS; o++)
    longs[n++] = *o;
  longs[n] = (struct option){NULL, 0, NULL, 0};
}

/* -n: the floats per rank, at most 2^62 - 1 on a 64-bit machine (their
 * bytes must fit in a size_t; with N ranks, check_job asks for N times as
 * many). */
static enum parse_result parse_count(const char *text, example_options *opts)
{
  unsigned long long value;
  int bits = 0;
  for (size_t max = SIZE_MAX / sizeof(float); max != 0; max >>= 1)
    bits++;
  if (parse_positive(text, SIZE_MAX / sizeof(float), &value) != 0)
    return option_error("invalid count '%s': use a whole number of floats per"
                        " rank from 1 to 2^%d - 1\n",
                        text, bits);
  opts->count = (size_t)value;
  return PARSE_OK;
}

/* getopt's ':' (a value missing) and '?' (an option nobody knows, or a
 * value given to one that takes none). `arg` is the argument getopt was
 * reading: a long option always has one of its own; a short one may sit
 * inside a cluster such as -zq, so it is named by getopt's optopt. */
static enum parse_result parse_mistake(int c, const char *arg,
                                       const struct option *longs)
{
  if (strncmp(arg, "--", 2) == 0 && arg[2] != '\0') {
    size_t len = strcspn(arg + 2, "=");
    const struct option *named = NULL; /* as getopt: whole, or a prefix */
    int prefixes = 0;
    char which[256] = ""; /* every option it begins: "--count or --csv" */
    for (const struct option *o = longs; o->name != NULL; o++)
      if (strncmp(o->name, arg + 2, len) == 0) {
        prefixes++;
        if (named == NULL || strlen(o->name) == len)
          named = o;
        snprintf(which + strlen(which), sizeof which - strlen(which),
                 "%s--%s", which[0] ? " or " : "", o->name);
      }
    if (named != NULL && (prefixes == 1 || strlen(named->name) == len)) {
      if (c == ':')
        return option_error("option '--%s' needs a value\n", named->name);
      return option_error("option '--%s' takes no value (got '%s')\n",
                          named->name, arg);
    }
    const int typed = (int)(len < 200 ? len : 200); /* before any '=' */
    if (prefixes > 1)
      return option_error("option '--%.*s' is ambiguous: it could be %s\n",
                          typed, arg + 2, which);
    return option_error("unknown option '--%.*s'\n", typed, arg + 2);
  }
  if (c == ':')
    return option_error("option '-%c' needs a value\n", optopt);
  return option_error("unknown option '-%c'\n", optopt);
}

enum parse_result parse_options(int argc, char *argv[], example_options *opts,
                                int be_quiet)
{
  set_program_name(argv[0]);
  usage_prog = path_base_name(argv[0]);
  quiet = be_quiet;
  *opts = (example_options){.prog = usage_prog, .count = DEFAULT_COUNT};
  instruments_options.reset();
  char shorts[64];
  struct option longs[MAX_LONG_OPTIONS + 1];
  option_tables(shorts, sizeof shorts, longs);

  int count_given = 0; /* -n, which some instruments do not use */
  opterr = 0;          /* we print our own messages */
  optind = 0; /* 0, not 1: getopt forgets a cluster a first parse left */
  for (int c, at = 1; (c = getopt_long(argc, argv, shorts, longs, NULL)) != -1;
       at = optind) {
    enum parse_result r = PARSE_OK;
    if (c == 'h') {
      if (!quiet)
        print_usage(stdout);
      return PARSE_HELP;
    } else if (c == 'n') {
      r = parse_count(optarg, opts);
      count_given = 1;
    } else if (c == ':' || c == '?') {
      r = parse_mistake(c, argv[at < argc ? at : argc - 1], longs);
    } else {
      r = instruments_options.parse(c, optarg);
    }
    if (r != PARSE_OK)
      return r;
  }
  if (optind < argc)
    return option_error("unexpected argument '%s'\n", argv[optind]);
  return instruments_options.check(count_given);
}
