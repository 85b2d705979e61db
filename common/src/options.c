#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_usage(FILE *out, const char *prog)
{
  fprintf(out,
          "Usage: %s [-n COUNT] [-h]\n"
          "  -n, --count COUNT  floats per rank (default %zu)\n"
          "  -h, --help         show this help and exit\n"
          "Environment (pthread build): NTHREADS=N runs N ranks, one per GPU\n"
          "(default: every visible GPU). MPI build: one rank per process.\n",
          prog, DEFAULT_COUNT);
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
  static const struct option longopts[] = {
      {"count", required_argument, NULL, 'n'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *slash = strrchr(argv[0], '/');
  opts->prog = slash ? slash + 1 : argv[0];
  opts->count = DEFAULT_COUNT;

  opterr = 0; /* we print our own messages */
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, ":n:h", longopts, NULL)) != -1) {
    unsigned long long value;
    switch (c) {
    case 'n':
      if (parse_positive(optarg, SIZE_MAX / sizeof(float), &value) != 0) {
        if (!quiet)
          fprintf(stderr,
                  "%s: invalid count '%s': use a whole number from 1 to %zu\n",
                  opts->prog, optarg, SIZE_MAX / sizeof(float));
        return PARSE_BAD;
      }
      opts->count = (size_t)value;
      break;
    case 'h':
      if (!quiet)
        print_usage(stdout, opts->prog);
      return PARSE_HELP;
    case ':':
      if (!quiet) {
        fprintf(stderr, "%s: option '%s' needs a value\n", opts->prog,
                argv[optind - 1]);
        print_usage(stderr, opts->prog);
      }
      return PARSE_BAD;
    default:
      if (!quiet) {
        fprintf(stderr, "%s: unknown option '%s'\n", opts->prog,
                argv[optind - 1]);
        print_usage(stderr, opts->prog);
      }
      return PARSE_BAD;
    }
  }
  if (optind < argc) {
    if (!quiet) {
      fprintf(stderr, "%s: unexpected argument '%s'\n", opts->prog,
              argv[optind]);
      print_usage(stderr, opts->prog);
    }
    return PARSE_BAD;
  }
  return PARSE_OK;
}
