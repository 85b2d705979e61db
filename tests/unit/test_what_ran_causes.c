/* What ran's Why line, from hand-made CUPTI observations and settings:
 * every cause the programs can name, and NCCL's variables and hosts as
 * each NCCL version reads them, without a GPU. */
#include "what_ran_fixture.h"

/* Ranks that differ are named; NULL windows are a cause. */
static void ranks_that_differ_and_null_windows(void)
{
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
}

/* Every cause at once, in a fixed order. */
static void every_cause_at_once(void)
{
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
}

/* The copy engines' driver edge: 12.5 itself is enough, 12.4 is not. */
static void driver_edge(void)
{
  reset(2);
  kernel(0, RING);
  kernel(1, RING);
  facts[0].driver = 12050;
  report("AllGather", 1, 2);
  LACKS("driver");
  facts[0].driver = 12049; /* as cudaDriverGetVersion encodes 12.4 */
  report("AllGather", 1, 2);
  HAS("the CUDA driver is 12.4; the copy engines need >= 12.5");
}

/* The driver matters only for the copy engines. */
static void driver_only_for_copy_engines(void)
{
  reset(2);
  kernel(0, RING);
  kernel(1, RING);
  facts[0].driver = 12040;
  report("AllReduce", 0, 2);
  LACKS("driver");
  HAS("no known cause found");
}

/* Ranks on two hosts: what the copy engines need depends on the loaded NCCL
 * (2.30 reaches across nodes in one NVLink system). */
static void two_hosts_per_version(void)
{
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
}

/* Hosts as NCCL counts them: NCCL_HOSTID when set (emulated nodes on one
 * machine), else the host name and boot id. */
static void hosts_as_nccl_counts_them(void)
{
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
}

/* NCCL_CTA_POLICY as each NCCL reads it. */
static void cta_policy_as_nccl_reads_it(void)
{
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
}

/* NCCL's integer variables: strtoll(text, NULL, 0). */
static void integer_variables(void)
{
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
}

/* The Why line names a policy from the environment that drops ZERO, as the
 * loaded NCCL reads it; not one that keeps it. */
static void cta_policy_in_the_why_line(void)
{
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
}

/* Before 2.29 a window is no proof of symmetric support. */
static void windows_prove_nothing_before_2_29(void)
{
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
}

/* Every cause at every rank position. */
static void every_cause_at_every_rank(void)
{
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
}

/* Before 2.28.7, ranks each alone on a host have no symmetric support. */
static void alone_on_nodes_before_2_28_7(void)
{
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
}

static const scenario scenarios[] = {
    SCENARIO(ranks_that_differ_and_null_windows),
    SCENARIO(every_cause_at_once),
    SCENARIO(driver_edge),
    SCENARIO(driver_only_for_copy_engines),
    SCENARIO(two_hosts_per_version),
    SCENARIO(hosts_as_nccl_counts_them),
    SCENARIO(cta_policy_as_nccl_reads_it),
    SCENARIO(integer_variables),
    SCENARIO(cta_policy_in_the_why_line),
    SCENARIO(windows_prove_nothing_before_2_29),
    SCENARIO(every_cause_at_every_rank),
    SCENARIO(alone_on_nodes_before_2_28_7),
};

int main(int argc, char **argv)
{
  return run_scenarios("test_what_ran_causes", scenarios,
                       sizeof scenarios / sizeof *scenarios,
                       argc > 1 ? argv[1] : NULL);
}
