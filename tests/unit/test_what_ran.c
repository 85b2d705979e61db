/* The report of what ran, from hand-made CUPTI observations: every outcome
 * and every cause the programs can name, without a GPU. Prints each report
 * it checks, so that a failure shows what was written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "requirements.h"
#include "test_util.h"
#include "what_ran.h"

#define SYMK "ncclSymkDevKernel_AllReduce_RSxLD_AGxST_sum_f32"
#define RING "ncclDevKernel_AllGather_RING_LL"

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

int main(void)
{
  unsetenv("NCCL_WIN_ENABLE");
  unsetenv("NCCL_CUMEM_ENABLE");

  /* The outcomes the examples are about: one line, no "Why". */
  reset(4);
  for (int r = 0; r < 4; r++)
    kernel(r, SYMK);
  report("AllReduce", 0, 4);
  HAS("What ran: AllReduce ran NCCL's symmetric kernel"
      " AllReduce_RSxLD_AGxST_sum_f32 on every rank\n");
  LACKS("Why");

  reset(3);
  for (int r = 0; r < 3; r++)
    facts[r].work.copies = 2;
  report("AllGather", 1, 3);
  HAS("What ran: AllGather ran on the copy engines: 0 kernels, 2 copies on"
      " every rank\n");
  LACKS("Why");

  /* Kernels and copies on one rank: both are said, the kernel decides. */
  reset(2);
  kernel(0, SYMK);
  kernel(1, SYMK);
  facts[1].work.copies = 3;
  report("AllGather", 1, 2);
  HAS("What ran: AllGather ran NCCL's symmetric kernel"
      " AllReduce_RSxLD_AGxST_sum_f32 on rank 0; NCCL's symmetric kernel"
      " AllReduce_RSxLD_AGxST_sum_f32 and 3 copies on rank 1\n");
  HAS("Why not the copy engines: ");
  reset(2);
  kernel(0, RING);
  kernel(1, RING);
  facts[0].work.copies = facts[1].work.copies = 1;
  report("AllReduce", 0, 2);
  HAS("ran NCCL's regular kernels of the RING family and 1 copy (no symmetric"
      " kernel) on every rank");
  reset(1);
  kernel(0, RING);
  facts[0].work.copies = 2;
  report("AllReduce", 0, 1);
  HAS("one rank: NCCL did a local kernel: regular kernels of the RING family"
      " and 2 copies, nothing");

  /* A regular kernel instead, no known cause. */
  reset(2);
  kernel(0, RING);
  kernel(1, RING);
  report("AllGather", 1, 2);
  HAS("ran NCCL's regular kernels of the RING family (no symmetric kernel) on"
      " every rank");
  HAS("Why not the copy engines: no known cause found");

  /* Ranks that differ are named; NULL windows are a cause. */
  reset(4);
  for (int r = 0; r < 4; r++)
    kernel(r, r == 3 ? RING : SYMK);
  facts[3].null_window = 1;
  report("AllReduce", 0, 4);
  HAS("symmetric kernel AllReduce_RSxLD_AGxST_sum_f32 on ranks 0-2;"
      " NCCL's regular kernels of the RING family (no symmetric kernel) on"
      " rank 3");
  HAS("Why no symmetric kernel: NULL windows on rank 3: NCCL registered no"
      " window");
  LACKS("no known cause");

  /* Every cause at once, in a fixed order. */
  reset(3);
  for (int r = 0; r < 3; r++)
    kernel(r, RING);
  facts[0].null_window = facts[2].null_window = 1;
  facts[0].driver = 12040;
  facts[2].p2p_to_first = 0;
  snprintf(facts[2].host, sizeof facts[2].host, "node1");
  setenv("NCCL_WIN_ENABLE", "0", 1);
  setenv("NCCL_CUMEM_ENABLE", "0", 1);
  report("AllGather", 1, 3);
  HAS("NULL windows on ranks 0, 2");
  HAS("; NCCL_WIN_ENABLE=0 is set");
  HAS("; NCCL_CUMEM_ENABLE=0 is set");
  HAS("; the CUDA driver is 12.4; the copy engines need >= 12.5");
  HAS("; the ranks are on 2 hosts");
  HAS("; GPUs 0 and 2 have no CUDA P2P access");
  unsetenv("NCCL_WIN_ENABLE");
  unsetenv("NCCL_CUMEM_ENABLE");

  /* The copy engines' driver edge: 12.5 itself is enough, 12.4 is not. */
  reset(2);
  kernel(0, RING);
  kernel(1, RING);
  facts[0].driver = 12050;
  report("AllGather", 1, 2);
  LACKS("driver");
  facts[0].driver = 12049; /* as cudaDriverGetVersion encodes 12.4 */
  report("AllGather", 1, 2);
  HAS("the CUDA driver is 12.4; the copy engines need >= 12.5");

  /* The driver matters only for the copy engines. */
  reset(2);
  kernel(0, RING);
  kernel(1, RING);
  facts[0].driver = 12040;
  report("AllReduce", 0, 2);
  LACKS("driver");
  HAS("no known cause found");

  /* Ranks on two hosts: what the copy engines need depends on the loaded
   * NCCL (2.30 reaches across nodes in one NVLink system). */
  const int versions[] = {0, NCCL_VERSION(2, 28, 9), NCCL_VERSION(2, 30, 7)};
  const char *wording[] = {
      "; the ranks are on 2 hosts: NCCL needs them in one NVLink domain\n",
      "; the ranks are on 2 hosts: NCCL 2.28.9 uses the copy engines only"
      " within one node (NCCL 2.30 adds multi-node NVLink systems)\n",
      "; the ranks are on 2 hosts: NCCL 2.30.7 uses the copy engines only"
      " within one NVLink domain (one node, or one multi-node NVLink"
      " system)\n"};
  for (int v = 0; v < 3; v++) {
    reset(2);
    kernel(0, RING);
    kernel(1, RING);
    facts[0].null_window = 1;
    facts[0].nccl = versions[v];
    snprintf(facts[1].host, sizeof facts[1].host, "node1");
    report("AllGather", 1, 2);
    HAS(wording[v]);
    report("AllReduce", 0, 2); /* the symmetric kernel: no version */
    HAS("; the ranks are on 2 hosts: NCCL needs them in one NVLink domain\n");
  }

  /* Hosts as NCCL counts them: NCCL_HOSTID when set (emulated nodes on one
   * machine), else the host name and boot id. */
  char plain[48], node0[48], node0_again[48], node1[48], empty[48];
  unsetenv("NCCL_HOSTID");
  host_identity(plain, sizeof plain);
  setenv("NCCL_HOSTID", "node0", 1);
  host_identity(node0, sizeof node0);
  host_identity(node0_again, sizeof node0_again);
  setenv("NCCL_HOSTID", "node1", 1);
  host_identity(node1, sizeof node1);
  setenv("NCCL_HOSTID", "", 1); /* set, though empty: NCCL takes it too */
  host_identity(empty, sizeof empty);
  EXPECT(strlen(plain) == 16 && strlen(node0) == 16);
  EXPECT(strcmp(node0, node0_again) == 0);
  EXPECT(strcmp(node0, node1) != 0);
  EXPECT(strcmp(node0, plain) != 0 && strcmp(empty, plain) != 0);
  reset(2);
  kernel(0, RING);
  kernel(1, RING);
  facts[0].null_window = 1;
  facts[0].nccl = NCCL_VERSION(2, 30, 7);
  snprintf(facts[0].host, sizeof facts[0].host, "%s", node0);
  snprintf(facts[1].host, sizeof facts[1].host, "%s", node1);
  report("AllReduce", 0, 2);
  HAS("; the ranks are on 2 hosts (by NCCL_HOSTID): NCCL needs them in one"
      " NVLink domain\n");
  unsetenv("NCCL_HOSTID");
  report("AllReduce", 0, 2);
  HAS("; the ranks are on 2 hosts: NCCL needs them");

  /* NCCL_CTA_POLICY as each NCCL reads it. */
  const int v228 = NCCL_VERSION(2, 28, 9), v230 = NCCL_VERSION(2, 30, 7);
  int pol = -1;
  EXPECT(nccl_env_cta_policy("ZERO", v230, &pol) && pol == 2);
  /* Both: NCCL unsets EFFICIENCY (2.30.7 src/init.cc). */
  EXPECT(nccl_env_cta_policy("zero|efficiency", v230, &pol) && pol == 2);
  EXPECT(nccl_env_cta_policy("0", v230, &pol) && pol == 0);
  EXPECT(nccl_env_cta_policy("2", v230, &pol) && pol == 2);
  EXPECT(nccl_env_cta_policy("7", v230, &pol) && pol == 0);
  EXPECT(nccl_env_cta_policy("EFFICIENCY", v230, &pol) && pol == 1);
  EXPECT(!nccl_env_cta_policy("BOGUS", v230, &pol));
  EXPECT(!nccl_env_cta_policy("", v230, &pol));
  EXPECT(!nccl_env_cta_policy(NULL, v230, &pol));
  EXPECT(nccl_env_cta_policy("ZERO", v228, &pol) && pol == 0); /* strtoll */
  EXPECT(nccl_env_cta_policy("2", v228, &pol) && pol == 2);
  EXPECT(nccl_env_cta_policy("0x2", v228, &pol) && pol == 2);
  /* Outside 0..2, 2.28 resets it to DEFAULT: no ZERO, whatever its bits
   * (2.28.3 and 2.28.9 src/init.cc). */
  for (const char *const *t = (const char *const[]){"3", "-1", "6", NULL}; *t;
       t++)
    EXPECT(nccl_env_cta_policy(*t, v228, &pol) && pol == 0);
  /* NCCL's integer variables: strtoll(text, NULL, 0). */
  setenv("NCCL_WIN_ENABLE", "0x0", 1);
  EXPECT(nccl_int_variable("NCCL_WIN_ENABLE", 1) == 0);
  setenv("NCCL_WIN_ENABLE", "1x", 1);
  EXPECT(nccl_int_variable("NCCL_WIN_ENABLE", 7) == 1);
  setenv("NCCL_WIN_ENABLE", "", 1);
  EXPECT(nccl_int_variable("NCCL_WIN_ENABLE", 7) == 7);
  setenv("NCCL_WIN_ENABLE", "99999999999999999999", 1);
  EXPECT(nccl_int_variable("NCCL_WIN_ENABLE", 7) == 7);
  unsetenv("NCCL_WIN_ENABLE");
  EXPECT(nccl_int_variable("NCCL_WIN_ENABLE", 7) == 7);

  /* The Why line names a policy from the environment that drops ZERO, as
   * the loaded NCCL reads it; not one that keeps it. */
  const char *cta_cases[][3] = {
      {"0", "30",
       "NCCL_CTA_POLICY=0 replaces config.CTAPolicy: the loaded"
       " NCCL reads it as 0, without ZERO (2)"},
      {"EFFICIENCY", "30",
       "NCCL_CTA_POLICY=EFFICIENCY replaces"
       " config.CTAPolicy: the loaded NCCL reads it as 1"},
      {"ZERO", "28",
       "NCCL_CTA_POLICY=ZERO replaces config.CTAPolicy: the"
       " loaded NCCL reads it as 0"},
      {"ZERO", "30", NULL},
      {"2", "28", NULL}};
  for (int c = 0; c < 5; c++) {
    reset(2);
    kernel(0, SYMK);
    kernel(1, SYMK);
    facts[0].nccl = cta_cases[c][1][0] == '3' ? v230 : v228;
    setenv("NCCL_CTA_POLICY", cta_cases[c][0], 1);
    report("AllGather", 1, 2);
    if (cta_cases[c][2])
      HAS(cta_cases[c][2]);
    else
      LACKS("NCCL_CTA_POLICY");
    report("AllReduce", 0, 2); /* only the copy-engine example asks */
    LACKS("NCCL_CTA_POLICY");
  }
  unsetenv("NCCL_CTA_POLICY");
  reset(2);
  kernel(0, RING);
  kernel(1, RING);
  facts[0].nccl = v228;
  setenv("NCCL_LOCAL_REGISTER", "0", 1);
  report("AllReduce", 0, 2);
  HAS("NCCL_LOCAL_REGISTER=0 is set (0 for NCCL; without symmetric support"
      " NCCL 2.28.3 then leaves the window handles unwritten)");
  facts[0].nccl = v230;
  report("AllReduce", 0, 2);
  LACKS("NCCL_LOCAL_REGISTER");
  unsetenv("NCCL_LOCAL_REGISTER");
  /* Before 2.29 a window is no proof of symmetric support. */
  reset(2);
  kernel(0, RING);
  kernel(1, RING);
  facts[0].nccl = NCCL_VERSION(2, 28, 3);
  report("AllReduce", 0, 2);
  HAS("no known cause found, and the windows prove nothing: NCCL 2.28.3 hands"
      " back local registrations where it has no symmetric support");
  facts[0].nccl = v230;
  report("AllReduce", 0, 2);
  HAS("no known cause found (NCCL_DEBUG=INFO");
  LACKS("prove nothing");

  /* One rank: a local copy, and why. */
  reset(1);
  facts[0].work.copies = 1;
  report("AllGather", 1, 1);
  HAS("What ran: one rank: NCCL did a local copy (1 copy, 0 kernels),"
      " nothing was communicated\n");
  HAS("Why not the copy engines: one rank: NCCL copies locally");

  /* Nothing recorded, and nothing measurable. */
  reset(2);
  report("AllReduce", 0, 2);
  HAS("ran no kernel and no copy that CUPTI saw on every rank");
  reset(2);
  facts[0].measured = facts[1].measured = 0;
  report("AllReduce", 0, 2);
  EXPECT(strcmp(out, "What ran: not measured: this build has no CUPTI\n") == 0);

  /* Non-contiguous rank lists. */
  reset(5);
  for (int r = 0; r < 5; r++)
    kernel(r, r % 2 ? RING : SYMK);
  report("AllReduce", 0, 5);
  HAS("on ranks 0, 2, 4;");
  HAS("on ranks 1, 3\n");

  /* Regular kernels by family: NCCL 2.28's names and 2.31's read alike. */
  const char *names[][2] = {
      {"ncclDevKernel_AllReduce_Sum_f32_RING_LL", "RING"},
      {"ncclDevKernel_AllReduce_f32_RING", "RING"},
      {"ncclDevKernel_AllGather_RING_LL", "RING"},
      {"ncclDevKernel_AllGather_RING", "RING"},
      {"ncclDevKernel_AllReduce_Sum_bf16_TREE_LL128", "TREE"},
      {"ncclDevKernel_AllReduce_f32_NVLS_TREE", "NVLS_TREE"},
      {"ncclDevKernel_AllReduce_Sum_f32_NVLS_SIMPLE", "NVLS"},
      {"ncclDevKernel_AllGather_PAT_SIMPLE", "PAT"},
      {"ncclDevKernel_AllReduce_f32_COLLNET_DIRECT", "COLLNET_DIRECT"},
      {"ncclDevKernel_Generic", "Generic"}};
  for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
    char want[128];
    reset(2);
    kernel(0, names[k][0]);
    kernel(1, names[k][0]);
    report("AllReduce", 0, 2);
    snprintf(want, sizeof want,
             "ran NCCL's regular kernels of the %s family (no symmetric kernel)"
             " on every rank\n",
             names[k][1]);
    HAS(want);
  }
  reset(2);
  kernel(0, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  kernel(1, "ncclDevKernel_AllReduce_f32_RING"); /* 2.28 and 2.31: alike */
  report("AllReduce", 0, 2);
  HAS("of the RING family (no symmetric kernel) on every rank\n");
  reset(2);
  for (int r = 0; r < 2; r++) {
    kernel(r, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    kernel(r, "ncclDevKernel_AllReduce_Sum_f32_TREE_LL");
    kernel(r, "ncclDevKernel_AllReduce_Sum_f32_RING_SIMPLE");
  }
  report("AllReduce", 0, 2);
  HAS("NCCL's regular kernels of the RING and TREE families (no symmetric"
      " kernel)");

  /* A rank with a symmetric and a regular kernel is symmetric, whichever
   * came last. */
  reset(2);
  kernel(0, SYMK);
  kernel(0, RING);
  kernel(1, RING);
  kernel(1, SYMK);
  report("AllReduce", 0, 2);
  HAS("What ran: AllReduce ran NCCL's symmetric kernel"
      " AllReduce_RSxLD_AGxST_sum_f32 and regular kernels of the RING family"
      " on every rank\n");
  LACKS("Why");
  EXPECT(what_ran_describe(&facts[0].work, 2, out, sizeof out) ==
         RAN_SYMMETRIC);
  EXPECT(what_ran_describe(&facts[1].work, 2, out, sizeof out) ==
         RAN_SYMMETRIC);
  reset(1);
  kernel(0, "ncclDevKernel_AllReduce_f32_RING");
  report("AllReduce", 0, 1);
  HAS("What ran: one rank: NCCL did a local kernel: regular kernels of the"
      " RING family, nothing was communicated\n");

  /* Every cause at every rank position. */
  for (int bad = 0; bad < 4; bad++) {
    char want[128];
    reset(4);
    for (int r = 0; r < 4; r++)
      kernel(r, RING);
    facts[bad].null_window = 1;
    report("AllReduce", 0, 4);
    snprintf(want, sizeof want, "Why no symmetric kernel: NULL windows on"
             " rank %d: NCCL registered no window", bad);
    HAS(want);
    if (bad == 0)
      continue;
    reset(4);
    for (int r = 0; r < 4; r++)
      kernel(r, RING);
    facts[bad].p2p_to_first = 0;
    report("AllReduce", 0, 4);
    snprintf(want, sizeof want,
             "Why no symmetric kernel: GPUs 0 and %d have no CUDA P2P access",
             bad);
    HAS(want);
    reset(4);
    for (int r = 0; r < 4; r++)
      kernel(r, RING);
    snprintf(facts[bad].host, sizeof facts[bad].host, "node9");
    report("AllReduce", 0, 4);
    HAS("Why no symmetric kernel: the ranks are on 2 hosts");
  }

  /* Before 2.28.7, ranks each alone on a host have no symmetric support. */
  reset(2);
  kernel(0, RING);
  kernel(1, RING);
  facts[0].nccl = NCCL_VERSION(2, 28, 3);
  snprintf(facts[1].host, sizeof facts[1].host, "node1");
  report("AllReduce", 0, 2);
  HAS("; NCCL 2.28.3 (before 2.28.7) has no symmetric support when every"
      " rank is alone on its node");
  facts[0].nccl = NCCL_VERSION(2, 28, 9);
  report("AllReduce", 0, 2);
  LACKS("alone on its node");

  /* 1024 ranks, every other one with a NULL window and another kernel:
   * the report keeps its Why line, whole. */
  {
    const int many = 1024;
    rank_facts *lots = calloc((size_t)many, sizeof *lots);
    size_t size = what_ran_report_size(many);
    char *text = calloc(size, 1);
    for (int r = 0; r < many; r++) {
      lots[r] = (rank_facts){.measured = 1, .device = r % 8, .driver = 13000,
                             .p2p_to_first = 1, .null_window = r % 2};
      snprintf(lots[r].host, sizeof lots[r].host, "node0");
      lots[r].work.kernels = 1;
      lots[r].work.nnames = 1;
      snprintf(lots[r].work.names[0], sizeof lots[r].work.names[0], "%s",
               r % 2 ? RING : SYMK);
    }
    what_ran_format("AllReduce", 0, many, lots, "", text, size);
    EXPECT(strstr(text, "Why no symmetric kernel: NULL windows on ranks 1, 3,")
           != NULL);
    EXPECT(strstr(text, ", 1021, 1023: NCCL registered no window") != NULL);
    EXPECT(strlen(text) + 1 < size && text[strlen(text) - 1] == '\n');
    free(text);
    free(lots);
  }

  if (test_failures)
    fprintf(stderr, "test_what_ran: %d failure(s)\n", test_failures);
  return test_failures ? 1 : 0;
}
