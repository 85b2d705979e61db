/* The two collectives --bench measures: everything that differs between
 * them is in this table, so no other file asks which one it is. */
#include "bench_impl.h"

#include <pthread.h>

#include "checks.h"
#include "verify.h"

/* ---------------------------------------------------------- AllReduce */

/* The AllReduce message is one rank's buffer. */
static size_t allreduce_count_for(size_t bytes, int nranks)
{
  (void)nranks;
  return bytes / sizeof(float);
}

static size_t allreduce_result_count(size_t count, int nranks)
{
  (void)nranks;
  return count;
}

/* Each rank's links carry 2(n-1)/n of the message (reduce-scatter, then
 * all-gather). */
static double allreduce_bus_factor(int nranks)
{
  return 2.0 * (nranks - 1) / nranks;
}

static void allreduce_run(const void *send, void *recv, size_t count,
                          ncclComm_t comm, cudaStream_t stream)
{
  NCCLCHECK(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, stream));
}

/* Every element is 1 + 2 + ... + n (rank r sends r + 1: modes.c). */
static size_t allreduce_count_wrong(const float *result, size_t count,
                                    int nranks)
{
  size_t first = 0;
  float sum = (float)nranks * (float)(nranks + 1) / 2;
  return count_mismatches(result, count, sum, &first);
}

static const bench_coll allreduce = {
    .title = "sum AllReduce",
    .size_text = "bytes per rank",
    .count_for = allreduce_count_for,
    .result_count = allreduce_result_count,
    .bus_factor = allreduce_bus_factor,
    .run = allreduce_run,
    .count_wrong = allreduce_count_wrong,
    .ncomms = 1,
    .comms = {{NCCL_CTA_POLICY_DEFAULT, "communicator init"}},
    .nmodes = 2,
    .modes = {{"sym", 0, 1, 0, "symmetric windows"},
              {"plain", 0, 0, 0, "ncclMemAlloc buffers, no windows"}},
};

/* A lesson with its own AllReduce kernel: that kernel on the windows,
 * beside NCCL's AllReduce on the same kind of windows and without. */
static const bench_coll allreduce_kernel = {
    .title = "sum AllReduce",
    .size_text = "bytes per rank",
    .count_for = allreduce_count_for,
    .result_count = allreduce_result_count,
    .bus_factor = allreduce_bus_factor,
    .run = allreduce_run,
    .count_wrong = allreduce_count_wrong,
    .ncomms = 1,
    .comms = {{NCCL_CTA_POLICY_DEFAULT, "communicator init"}},
    .nmodes = 3,
    .modes = {{"lsa", 0, 1, 1, "the lesson's kernel on symmetric windows"},
              {"sym", 0, 1, 0, "ncclAllReduce on symmetric windows"},
              {"plain", 0, 0, 0, "ncclMemAlloc buffers, no windows"}},
};

/* allgather_ce needs NCCL 2.28 (CTAPolicy ZERO) and refuses older headers;
 * allreduce_sm, which builds this file too, never asks for the AllGather. */
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
/* ---------------------------------------------------------- AllGather */

/* The AllGather message is the whole gathered result. */
static size_t allgather_count_for(size_t bytes, int nranks)
{
  return bytes / sizeof(float) / (size_t)nranks;
}

static size_t allgather_result_count(size_t count, int nranks)
{
  return count * (size_t)nranks;
}

/* Each rank receives the (n-1)/n of the result it did not send. */
static double allgather_bus_factor(int nranks)
{
  return (double)(nranks - 1) / nranks;
}

static void allgather_run(const void *send, void *recv, size_t count,
                          ncclComm_t comm, cudaStream_t stream)
{
  NCCLCHECK(ncclAllGather(send, recv, count, ncclFloat, comm, stream));
}

/* Segment r holds rank r's value, r + 1, everywhere. */
static size_t allgather_count_wrong(const float *result, size_t count,
                                    int nranks)
{
  size_t first = 0, wrong = 0;
  for (int r = 0; r < nranks; r++) {
    const float *segment = result + (size_t)r * count;
    wrong += count_mismatches(segment, count, (float)(r + 1), &first);
  }
  return wrong;
}

static const bench_coll allgather = {
    .title = "AllGather",
    .size_text = "bytes gathered per rank",
    .count_for = allgather_count_for,
    .result_count = allgather_result_count,
    .bus_factor = allgather_bus_factor,
    .run = allgather_run,
    .count_wrong = allgather_count_wrong,
    .ncomms = 2,
    .comms = {{NCCL_CTA_POLICY_DEFAULT, "communicator init"},
              {NCCL_CTA_POLICY_ZERO, "with CTAPolicy ZERO"}},
    .nmodes = 3,
    .modes = {{"ce", 1, 1, 0, "CTAPolicy ZERO + symmetric windows"},
              {"sym", 0, 1, 0, "default policy + windows"},
              {"plain", 0, 0, 0, "default policy, no windows"}},
};
#endif

/* A kernel of several variants (04_allreduce_fast): one mode each, then
 * NCCL's AllReduce on windows and without. Filled once, by the first rank
 * to ask, before any other rank of the process reads it. */
static bench_coll allreduce_variants;
static pthread_once_t variants_once = PTHREAD_ONCE_INIT;
static const device_kernel *variants_kernel;

static void fill_variants(void)
{
  const device_kernel *k = variants_kernel;
  allreduce_variants = allreduce_kernel;
  int n = 0;
  for (int v = 0; v < k->nvariants; v++)
    allreduce_variants.modes[n++] =
        (mode_spec){k->names[v], 0, 1, v + 1, k->texts[v]};
  allreduce_variants.modes[n++] = allreduce_kernel.modes[1]; /* sym */
  allreduce_variants.modes[n++] = allreduce_kernel.modes[2]; /* plain */
  allreduce_variants.nmodes = n;
}

const bench_coll *bench_coll_of(const example_desc *example)
{
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
  if (example->collective == COLLECTIVE_ALLGATHER)
    return &allgather;
#endif
  if (example->kernel == NULL)
    return &allreduce;
  if (example->kernel->nvariants == 0)
    return &allreduce_kernel;
  variants_kernel = example->kernel;
  pthread_once(&variants_once, fill_variants);
  return &allreduce_variants;
}
