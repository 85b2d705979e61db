/* A tiny check macro for the unit tests: counts failures, names the line. */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H
#include <stdio.h>

static int test_failures;

#define EXPECT(cond)                                                           \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: expectation failed: %s\n", __FILE__, __LINE__,   \
              #cond);                                                          \
      test_failures++;                                                         \
    }                                                                          \
  } while (0)

#endif
