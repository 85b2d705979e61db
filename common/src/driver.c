/* The driver: one run of an example, the same in both builds. What differs
 * between threads and MPI processes is behind transport.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "bootstrap.h"
#include "checks.h"
#include "instruments.h"
#include "output.h"
#include "requirements.h"
#include "transport.h"

/* Looks for GPUs without ending the job: on a machine without a GPU or
 * driver the caller reports the CUDA error in its own words. */
static cudaError_t count_gpus(int *ngpus)
{
  *ngpus = 0;
  cudaError_t err;
  WATCHED(err, cudaGetDeviceCount(ngpus));
  if (err == cudaSuccess && *ngpus == 0)
    err = cudaErrorNoDevice;
  return err;
}

/* The framework line printed before the example's output when ranks share
 * GPUs, so that nobody mistakes one GPU's numbers for a link's. */
static void say_gpus_shared(int ranks, int ngpus)
{
  printf("%d ranks share %d GPU%s (NCCL_MULTI_RANK_GPU_ENABLE=1): results are"
         " real NCCL; bandwidths are one GPU's, not a link's\n",
         ranks, ngpus, ngpus == 1 ? "" : "s");
}

/* What every rank runs: the example's requirements, then its lesson (the
 * instruments may measure it, or run their bench instead). */
static int run_rank(const rank_ctx *ctx)
{
  const example_desc *ex = ctx->example;
  if (!all_ranks_require_nccl(ctx, ex->min_nccl, ex->needs) ||
      !all_ranks_require_headers(ctx, ex->headers_bound))
    return EXIT_FAILURE;
  return instruments_run(ctx, ex->lesson);
}

/* Checks, on every process, that the job's ranks fit the GPUs. A problem
 * that every process has is said once (by process 0, or once per node);
 * a process whose problem differs from process 0's says its own. Returns
 * 0 or the status to stop with, the same on every process. */
static int check_job(const example_options *opts, int nranks, int ngpus,
                     cudaError_t gpu_err)
{
  int first = transport_process() == 0;
  int local_rank, local_size;
  transport_node(nranks, &local_rank, &local_size);
  /* Process 0's GPU error, on every process (cudaError_t values are >= 0). */
  const int first_err = transport_worst(first ? (int)gpu_err : -1);
  int problem = EXIT_SUCCESS;
  if (gpu_err != cudaSuccess) {
    /* CUDA says "driver version is insufficient" also when there is no
     * driver at all: say both. */
    if (first || (int)gpu_err != first_err)
      print_error("no usable GPU: cudaGetDeviceCount failed: %s (%s)%s\n",
                  cudaGetErrorString(gpu_err), cudaGetErrorName(gpu_err),
                  gpu_err == cudaErrorInsufficientDriver
                      ? ": no NVIDIA driver was found, or it is older than"
                        " this CUDA runtime (nvidia-smi shows which)"
                      : "");
    problem = EXIT_FAILURE;
  } else if (!count_fits(opts->count, nranks)) {
    if (first)
      print_error("count %zu is too large for %d ranks: %zu x %d x 4 bytes"
                  " does not fit in memory addresses\n",
                  opts->count, nranks, opts->count, nranks);
    problem = EXIT_USAGE;
  }
  int worst = transport_worst(problem);
  if (worst == EXIT_SUCCESS) {
    /* Which ranks of the node use which GPU (collective over the node);
     * the ranks of a node share its verdict: its first rank says it. */
    char who[512];
    const int per_gpu = transport_gpu_load(local_rank % ngpus, ngpus,
                                           local_size, who, sizeof who);
    enum gpu_sharing sharing = decide_gpu_sharing(local_size, ngpus, per_gpu,
                                                  who, local_rank == 0);
    if (sharing == GPU_TOO_FEW && local_rank == 0)
      transport_too_few_gpus(local_size, ngpus, who);
    if (sharing == GPU_TOO_FEW || sharing == GPU_SHARING_BAD)
      problem = EXIT_USAGE;
    worst = transport_worst(problem);
    if (sharing == GPU_SHARED && worst == EXIT_SUCCESS) {
      /* Every process sets its own NCCL_MAX_CTAS; the first says so. */
      if (first)
        say_gpus_shared(local_size, ngpus);
      fit_shared_gpu_kernels(per_gpu, local_rank % ngpus, first);
    }
  }
  if (worst != EXIT_SUCCESS && first && problem == EXIT_SUCCESS)
    /* fine here: say why it stops */
    print_error("stopping: another rank has no GPU of its own (see its"
                " message)\n");
  return worst;
}

/* A checksum of the options that matter to every rank (31 bits): the
 * lesson's and the instruments'. */
static int options_checksum(const example_options *o, enum parse_result r)
{
  unsigned long long values[32] = {r, o->count};
  int n = 2 + instruments_options.values(values + 2, 30);
  return (int)(hash_bytes(values, (size_t)n * sizeof values[0]) & 0x7fffffff);
}

/* Parses the command line on every process; in MPI mode every rank must
 * have the same options, or none runs. A mistake every rank makes is said
 * once, by rank 0; a rank with a mistake of its own, or with options that
 * differ from rank 0's, says so. Returns 0 (and *parsed: PARSE_OK or
 * PARSE_HELP) or EXIT_USAGE, the same on every process. */
static int agree_on_options(int argc, char *argv[], example_options *opts,
                            enum parse_result *parsed)
{
  const int process = transport_process();
  *parsed = parse_options(argc, argv, opts, process != 0);
  /* From here on nothing waits for ever (the instruments' watchdog). */
  instruments_start(*parsed == PARSE_OK);
  const int bad = *parsed == PARSE_BAD;
  if (transport_worst(bad) != 0) {
    /* Rank 0 has said its own mistake; a rank whose mistake rank 0 does
     * not share says its own (then it has another command line). */
    const int first_bad = transport_worst(process == 0 ? bad : 0);
    if (process != 0 && bad && !first_bad)
      parse_options(argc, argv, opts, 0); /* now saying why */
    else if (process == 0 && !bad)
      print_error("stopping: another MPI rank could not parse its command"
                  " line (see its message); every rank needs the same"
                  " options\n");
    return EXIT_USAGE;
  }
  int mine = options_checksum(opts, *parsed);
  int root = transport_worst(process == 0 ? mine : -1); /* rank 0's */
  if (transport_worst(mine != root)) {
    if (mine != root)
      print_error("its command line differs from rank 0's\n");
    if (process == 0)
      print_error("stopping: the MPI ranks got different command lines;"
                  " every rank needs the same options\n");
    return EXIT_USAGE;
  }
  return EXIT_SUCCESS;
}

int run_example(int argc, char *argv[], const example_desc *example)
{
  set_program_name(argv[0]);
  if (own_standard_streams() != 0)
    return EXIT_FAILURE;
  transport_start(&argc, &argv);
  int first = transport_process() == 0;
  example_options opts;
  enum parse_result parsed = PARSE_OK;
  int status = agree_on_options(argc, argv, &opts, &parsed);
  if (status != EXIT_SUCCESS || parsed == PARSE_HELP)
    goto done;

  int ngpus = 0, nranks = 0;
  cudaError_t gpu_err = count_gpus(&ngpus);
  status = transport_rank_count(gpu_err == cudaSuccess ? ngpus : -1, &nranks);
  if (status == EXIT_SUCCESS)
    status = check_job(&opts, nranks, ngpus, gpu_err);
  if (status != EXIT_SUCCESS)
    goto done;

  if (first) {
    transport_banner(nranks, ngpus);
    fflush(stdout);
  }
  int first_rank, my_ranks;
  transport_my_ranks(nranks, &first_rank, &my_ranks);
  instruments_watch_ranks(first_rank, my_ranks);
  status = run_ranks(nranks, ngpus, &opts, run_rank, example);
  /* The ranks are done; the last writes are watched as the first rank's
   * (stdout may be a pipe nobody reads). */
  watch_rank(first_rank);
  watch_begin("writing to standard output", __FILE__, __LINE__);
  if (first && status == EXIT_SUCCESS)
    printf("\nAll NCCL communicators finalized successfully!\n");
  if (first)
    instruments_report();
  watch_end();

done:
  /* Lost output is a failure: the verification lines are the result. */
  watch_begin("writing to standard output", __FILE__, __LINE__);
  int flushed = fflush(stdout) == 0 && !ferror(stdout);
  watch_end();
  if (!flushed) {
    print_error("writing to standard output failed: %s\n",
                errno ? strerror(errno) : "unknown error");
    status = EXIT_FAILURE;
  }
  /* The watchdog asks the other processes no more (its thread may call
   * MPI), and watches MPI_Finalize (transport_stop) too. */
  instruments_finalizing();
  transport_stop();
  instruments_stop();
  return status;
}
