/* Strict parsing of NTHREADS, -n/--count and the other options; NCCL's
 * version codes as the messages print them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "requirements.h"
#include "test_util.h"

static enum parse_result parse(const char *a1, const char *a2, size_t *count)
{
  char *argv[4] = {"prog", (char *)a1, (char *)a2, NULL};
  int argc = a1 ? (a2 ? 3 : 2) : 1;
  example_options opts;
  enum parse_result r = parse_options(argc, argv, &opts, 1);
  *count = opts.count;
  return r;
}

/* NCCL_VERSION(X, Y, Z) (nccl.h) packs X*10000 + Y*100 + Z from 2.9.0
 * on, X*1000 + Y*100 + Z before: 2.9.0 is 20900, 2.8.4 is 2804. */
static void version_texts(void)
{
  static const struct {
    int code;
    const char *text;
  } cases[] = {{20900, "2.9.0"}, {2804, "2.8.4"}, {22809, "2.28.9"},
               {23007, "2.30.7"}, {21001, "2.10.1"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char buf[32];
    format_nccl_version(cases[i].code, buf, sizeof buf);
    EXPECT(strcmp(buf, cases[i].text) == 0);
  }
}

int main(void)
{
  version_texts();
  int n = -7;
  static const char *bad_threads[] = {"abc", "2x",   "0",
                                      "-1",  "",     " 2",
                                      "+2",  "1025", "99999999999999999999999",
                                      "2 ",  "0x2",  "1.5"};
  for (size_t i = 0; i < sizeof bad_threads / sizeof *bad_threads; i++) {
    if (parse_thread_count(bad_threads[i], &n) != -1) {
      fprintf(stderr, "NTHREADS='%s' was accepted\n", bad_threads[i]);
      test_failures++;
    }
  }
  EXPECT(n == -7); /* untouched by rejected values */
  EXPECT(parse_thread_count(NULL, &n) == -1);
  EXPECT(parse_thread_count("1", &n) == 0 && n == 1);
  EXPECT(parse_thread_count("8", &n) == 0 && n == 8);
  EXPECT(parse_thread_count("1024", &n) == 0 && n == 1024);

  size_t count = 0;
  /* The default the README and the usage text state: 1048576 floats. */
  EXPECT(parse(NULL, NULL, &count) == PARSE_OK && count == 1048576);
  EXPECT(parse("-n", "1000", &count) == PARSE_OK && count == 1000);
  EXPECT(parse("--count", "7", &count) == PARSE_OK && count == 7);
  EXPECT(parse("--count=9", NULL, &count) == PARSE_OK && count == 9);
  EXPECT(parse("-n", "0", &count) == PARSE_BAD);
  EXPECT(parse("-n", "-5", &count) == PARSE_BAD);
  EXPECT(parse("-n", "12k", &count) == PARSE_BAD);
  EXPECT(parse("-n", "99999999999999999999999", &count) == PARSE_BAD);
  EXPECT(parse("-n", NULL, &count) == PARSE_BAD);
  EXPECT(parse("-h", NULL, &count) == PARSE_HELP);
  EXPECT(parse("--help", NULL, &count) == PARSE_HELP);
  EXPECT(parse("--bogus", NULL, &count) == PARSE_BAD);
  EXPECT(parse("-x", NULL, &count) == PARSE_BAD);
  EXPECT(parse("extra", NULL, &count) == PARSE_BAD);

  EXPECT(count_fits(1024 * 1024, 8));
  EXPECT(count_fits(SIZE_MAX / 4, 1));
  EXPECT(!count_fits(SIZE_MAX / 4, 2));
  EXPECT(!count_fits(SIZE_MAX / 4 / 8 + 1, 8));
  EXPECT(count_fits(SIZE_MAX / 4 / 8, 8));
  EXPECT(!count_fits(0, 1));

  if (test_failures == 0)
    printf("test_options: all checks passed\n");
  return test_failures == 0 ? 0 : 1;
}
