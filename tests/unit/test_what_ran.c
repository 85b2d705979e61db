/* What ran's first line, from hand-made CUPTI observations: every outcome
 * the programs can name, without a GPU (the causes, the Why line:
 * test_what_ran_causes.c). */
#include "what_ran_fixture.h"

/* The outcomes the examples are about: one line, no "Why". */
static void outcomes_of_the_examples(void)
{
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
}

/* Kernels and copies on one rank: both are said, the kernel decides. */
static void kernels_and_copies_on_one_rank(void)
{
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
}

/* A regular kernel instead, no known cause. */
static void regular_kernel_without_a_cause(void)
{
  reset(2);
  kernel(0, RING);
  kernel(1, RING);
  report("AllGather", 1, 2);
  HAS("ran NCCL's regular kernels of the RING family (no symmetric kernel) on"
      " every rank");
  HAS("Why not the copy engines: no known cause found");
}

/* One rank: a local copy, and why. */
static void one_rank_local_copy(void)
{
  reset(1);
  facts[0].work.copies = 1;
  report("AllGather", 1, 1);
  HAS("What ran: one rank: NCCL did a local copy (1 copy, 0 kernels),"
      " nothing was communicated\n");
  HAS("Why not the copy engines: one rank: NCCL copies locally");
}

/* Nothing recorded, and nothing measurable. */
static void nothing_recorded_or_measured(void)
{
  reset(2);
  report("AllReduce", 0, 2);
  HAS("ran no kernel and no copy that CUPTI saw on every rank");
  reset(2);
  facts[0].measured = facts[1].measured = 0;
  report("AllReduce", 0, 2);
  EXPECT(strcmp(out, "What ran: not measured: this build has no CUPTI\n") == 0);
}

/* Non-contiguous rank lists. */
static void rank_lists_with_gaps(void)
{
  reset(5);
  for (int r = 0; r < 5; r++)
    kernel(r, r % 2 ? RING : SYMK);
  report("AllReduce", 0, 5);
  HAS("on ranks 0, 2, 4;");
  HAS("on ranks 1, 3\n");
}

/* Regular kernels by family: NCCL 2.28's names and 2.31's read alike. */
static void kernel_families(void)
{
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
}

/* A rank with a symmetric and a regular kernel is symmetric, whichever came
 * last. */
static void symmetric_beside_regular(void)
{
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
}

/* 1024 ranks, every other one with a NULL window and another kernel: the
 * report keeps its Why line, whole. */
static void a_thousand_ranks(void)
{
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
}

static const scenario scenarios[] = {
    SCENARIO(outcomes_of_the_examples),
    SCENARIO(kernels_and_copies_on_one_rank),
    SCENARIO(regular_kernel_without_a_cause),
    SCENARIO(one_rank_local_copy),
    SCENARIO(nothing_recorded_or_measured),
    SCENARIO(rank_lists_with_gaps),
    SCENARIO(kernel_families),
    SCENARIO(symmetric_beside_regular),
    SCENARIO(a_thousand_ranks),
};

int main(int argc, char **argv)
{
  return run_scenarios("test_what_ran", scenarios,
                       sizeof scenarios / sizeof *scenarios,
                       argc > 1 ? argv[1] : NULL);
}
