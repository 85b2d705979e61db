/* What the unit tests of What ran share (test_what_ran.c: the outcomes,
 * test_what_ran_causes.c: the causes): hand-made CUPTI observations of up
 * to 8 ranks, the report written from them, and named scenarios, each run
 * from a clean environment (a scenario's name as the argument runs it
 * alone). Each report checked is printed, so that a failure shows it. */
#ifndef WHAT_RAN_FIXTURE_H
#define WHAT_RAN_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "requirements.h"
#include "test_util.h"
#include "what_ran.h"

#define SYMK "ncclSymkDevKernel_AllReduce_RSxLD_AGxST_sum_f32"
#define RING "ncclDevKernel_AllGather_RING_LL"

static const int v228 = NCCL_VERSION(2, 28, 9), v230 = NCCL_VERSION(2, 30, 7);
static rank_facts facts[8];
static char out[2048];

/* n ranks on one host, devices 0..n-1, measured, P2P everywhere. */
static void reset(int n)
{
  memset(facts, 0, sizeof facts);
  for (int r = 0; r < n; r++) {
    facts[r] = (rank_facts){.measured = 1,
                            .device = r,
                            .driver = 13000,
                            .p2p_to_first = r ? 1 : -1};
    snprintf(facts[r].host, sizeof facts[r].host, "node0");
  }
}

static void kernel(int r, const char *name)
{
  engine_work *w = &facts[r].work;
  w->kernels++;
  snprintf(w->names[w->nnames++], sizeof w->names[0], "%s", name);
}

static void report(const char *coll, int want_ce, int n)
{
  what_ran_format(coll, want_ce, n, facts, "this build has no CUPTI", out,
                  sizeof out);
  printf("--- %s, %d ranks:\n%s", coll, n, out);
}

#define HAS(text)   EXPECT(strstr(out, text) != NULL)
#define LACKS(text) EXPECT(strstr(out, text) == NULL)

typedef struct scenario {
  const char *name;
  void (*run)(void);
} scenario;
#define SCENARIO(f) {#f, f}

/* Runs the scenarios (only the one named `only`, if not NULL) and says
 * which failed; the exit status. */
static int run_scenarios(const char *prog, const scenario *s, size_t n,
                         const char *only)
{
  static const char *const variables[] = {
      "NCCL_WIN_ENABLE", "NCCL_CUMEM_ENABLE", "NCCL_HOSTID",
      "NCCL_CTA_POLICY", "NCCL_LOCAL_REGISTER"};
  int ran = 0;
  for (size_t i = 0; i < n; i++) {
    if (only != NULL && strcmp(only, s[i].name) != 0)
      continue;
    for (size_t v = 0; v < sizeof variables / sizeof *variables; v++)
      unsetenv(variables[v]);
    int before = test_failures;
    printf("=== %s\n", s[i].name);
    s[i].run();
    ran++;
    if (test_failures > before)
      fprintf(stderr, "%s: scenario %s failed\n", prog, s[i].name);
  }
  if (ran == 0) {
    fprintf(stderr, "%s: no scenario named '%s'\n", prog, only);
    return 2;
  }
  if (test_failures)
    fprintf(stderr, "%s: %d failure(s)\n", prog, test_failures);
  return test_failures ? 1 : 0;
}

#endif
