#include "bootstrap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include "checks.h"
#include "requirements.h"

#ifndef USE_MPI
#include <pthread.h>
#endif

/* The rank this thread runs (pthread mode) or this process is (MPI mode);
 * only used to label error messages. */
static _Thread_local int this_rank = -1;

int current_rank(void) { return this_rank; }

int all_ranks_ok(const rank_ctx *ctx, int ok)
{
  return rank_max(ctx, !ok) == 0;
}

/* Looks for GPUs without ending the job: on a machine without a GPU or
 * driver the caller reports the CUDA error in its own words. */
static cudaError_t count_gpus(int *ngpus)
{
  *ngpus = 0;
  cudaError_t err = cudaGetDeviceCount(ngpus);
  if (err == cudaSuccess && *ngpus == 0)
    err = cudaErrorNoDevice;
  return err;
}

static void report_no_gpu(cudaError_t err)
{
  print_error("no usable GPU: cudaGetDeviceCount failed: %s (%s)\n",
              cudaGetErrorString(err), cudaGetErrorName(err));
}

/* The framework line printed before the example's output when ranks share
 * GPUs, so that nobody mistakes one GPU's numbers for a link's. */
static void say_gpus_shared(int ranks, int ngpus)
{
  printf("%d ranks share %d GPU%s (NCCL_MULTI_RANK_GPU_ENABLE=1): results are"
         " real NCCL; bandwidths are one GPU's, not a link's\n",
         ranks, ngpus, ngpus == 1 ? "" : "s");
}

#ifndef USE_MPI
/* ---------------------------------------------------------------------------
 * pthread mode: ranks are threads of this process. Their shared state lives
 * in a run_state owned by run_ranks, handed to each rank through its ctx.
 * ------------------------------------------------------------------------ */

struct run_state {
  int nranks;
  pthread_barrier_t barrier;
  ncclUniqueId id;      /* broadcast slot */
  unsigned char *slots; /* gather slots: nranks * RANK_GATHER_MAX */
  int *values;          /* one int per rank for rank_max */
};

static void wait_all(run_state *run)
{
  int err = pthread_barrier_wait(&run->barrier);
  if (err != 0 && err != PTHREAD_BARRIER_SERIAL_THREAD) {
    print_error("pthread_barrier_wait failed: %s\n", strerror(err));
    job_abort(1);
  }
}

void util_broadcast(int root, const rank_ctx *ctx, ncclUniqueId *id)
{
  run_state *run = ctx->run;
  if (ctx->rank == root)
    run->id = *id;
  wait_all(run);
  if (ctx->rank != root)
    *id = run->id;
  wait_all(run); /* the slot may be reused only after everyone has read it */
}

void rank_gather(const rank_ctx *ctx, const void *mine, size_t size, void *all)
{
  run_state *run = ctx->run;
  memcpy(run->slots + (size_t)ctx->rank * RANK_GATHER_MAX, mine, size);
  wait_all(run);
  if (ctx->rank == 0)
    for (int r = 0; r < run->nranks; r++)
      memcpy((unsigned char *)all + (size_t)r * size,
             run->slots + (size_t)r * RANK_GATHER_MAX, size);
  wait_all(run);
}

int rank_max(const rank_ctx *ctx, int value)
{
  run_state *run = ctx->run;
  run->values[ctx->rank] = value;
  wait_all(run);
  int max = run->values[0];
  for (int r = 1; r < run->nranks; r++)
    if (run->values[r] > max)
      max = run->values[r];
  wait_all(run);
  return max;
}

_Noreturn void job_abort(int status)
{
  fflush(stdout);
  fflush(stderr);
  /* _exit, not exit: other rank threads may be inside CUDA or NCCL, and
   * running the libraries' exit handlers under them can hang. */
  _exit(status);
}

typedef struct rank_thread {
  pthread_t thread;
  rank_ctx ctx;
  example_fn fn;
  int status;
} rank_thread;

static void *rank_main(void *arg)
{
  rank_thread *t = arg;
  this_rank = t->ctx.rank;
  t->status = t->fn(&t->ctx);
  return NULL;
}

int run_ranks(int nranks, int ngpus, const example_options *opts, example_fn fn)
{
  run_state run = {.nranks = nranks};
  run.slots = host_calloc((size_t)nranks, RANK_GATHER_MAX);
  run.values = host_calloc((size_t)nranks, sizeof(int));
  rank_thread *threads = host_calloc((size_t)nranks, sizeof(rank_thread));
  int err = pthread_barrier_init(&run.barrier, NULL, (unsigned)nranks);
  if (err != 0) {
    print_error("pthread_barrier_init failed: %s\n", strerror(err));
    job_abort(1);
  }

  for (int r = 0; r < nranks; r++) {
    threads[r].ctx = (rank_ctx){.rank = r,
                                .nranks = nranks,
                                .device = r % ngpus,
                                .ngpus = ngpus,
                                .gpu_shared = nranks > ngpus,
                                .ranks_are_threads = 1,
                                .opts = opts,
                                .run = &run};
    threads[r].fn = fn;
    err = pthread_create(&threads[r].thread, NULL, rank_main, &threads[r]);
    if (err != 0) {
      /* Threads already started would wait forever for this one. */
      print_error("pthread_create for rank %d failed: %s\n", r, strerror(err));
      job_abort(1);
    }
  }
  int status = 0;
  for (int r = 0; r < nranks; r++) {
    pthread_join(threads[r].thread, NULL);
    if (threads[r].status > status)
      status = threads[r].status;
  }

  pthread_barrier_destroy(&run.barrier);
  free(threads);
  free(run.values);
  free(run.slots);
  return status;
}

int run_example(int argc, char *argv[], example_fn fn)
{
  example_options opts;
  switch (parse_options(argc, argv, &opts, 0)) {
  case PARSE_HELP: return EXIT_SUCCESS;
  case PARSE_BAD: return EXIT_USAGE;
  case PARSE_OK: break;
  }
  set_program_name(opts.prog);

  int ngpus = 0;
  cudaError_t gpu_err = count_gpus(&ngpus);

  const char *env = getenv("NTHREADS");
  int nranks = ngpus;
  if (env != NULL && parse_thread_count(env, &nranks) != 0) {
    if (gpu_err == cudaSuccess)
      print_error("invalid NTHREADS='%s': use a whole number from 1 to %d"
                  " (the number of visible GPUs)\n",
                  env, ngpus);
    else
      print_error("invalid NTHREADS='%s': use a whole number from 1 to"
                  " the number of visible GPUs\n",
                  env);
    return EXIT_USAGE;
  }
  if (gpu_err != cudaSuccess) {
    report_no_gpu(gpu_err);
    return EXIT_FAILURE;
  }
  switch (decide_gpu_sharing(nranks, ngpus)) {
  case GPU_ONE_RANK_EACH:
  case GPU_SHARED: break;
  case GPU_TOO_FEW:
    print_error("NTHREADS=%d asks for more ranks than GPUs: %d visible;"
                " one rank per GPU, so use NTHREADS=1..%d%s\n",
                nranks, ngpus, ngpus, shared_gpu_hint());
    return EXIT_USAGE;
  case GPU_SHARING_BAD: return EXIT_USAGE;
  }
  if (!count_fits(opts.count, nranks)) {
    print_error("count %zu is too large for %d ranks: %zu x %d x 4 bytes"
                " does not fit in memory addresses\n",
                opts.count, nranks, opts.count, nranks);
    return EXIT_USAGE;
  }

  if (nranks > ngpus) {
    say_gpus_shared(nranks, ngpus);
    fit_shared_gpu_kernels(nranks, ngpus, 0, 1);
  }
  printf("Creating %d threads for %d devices\n", nranks, ngpus);
  fflush(stdout);
  int status = run_ranks(nranks, ngpus, &opts, fn);
  if (status == EXIT_SUCCESS)
    printf("\nAll NCCL communicators finalized successfully!\n");
  return status;
}

#else
/* ---------------------------------------------------------------------------
 * MPI mode: ranks are processes; MPI carries the exchanges.
 * ------------------------------------------------------------------------ */

struct run_state {
  int unused; /* MPI_COMM_WORLD holds everything; kept for one interface */
};

void util_broadcast(int root, const rank_ctx *ctx, ncclUniqueId *id)
{
  (void)ctx;
  MPICHECK(MPI_Bcast(id, sizeof *id, MPI_BYTE, root, MPI_COMM_WORLD));
}

void rank_gather(const rank_ctx *ctx, const void *mine, size_t size, void *all)
{
  (void)ctx;
  MPICHECK(MPI_Gather(mine, (int)size, MPI_BYTE, all, (int)size, MPI_BYTE, 0,
                      MPI_COMM_WORLD));
}

int rank_max(const rank_ctx *ctx, int value)
{
  (void)ctx;
  int max = value;
  MPICHECK(MPI_Allreduce(&value, &max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  return max;
}

_Noreturn void job_abort(int status)
{
  fflush(stdout);
  fflush(stderr);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized)
    MPI_Abort(MPI_COMM_WORLD, status); /* ends every process of the job */
  _exit(status);
}

/* The rank of this process among those on its node, and how many there are:
 * the node-local rank picks the GPU, so multi-node jobs work. */
static void node_local_rank(int *local_rank, int *local_size)
{
  int world_rank;
  MPI_Comm node;
  MPICHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
  MPICHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank,
                               MPI_INFO_NULL, &node));
  MPICHECK(MPI_Comm_rank(node, local_rank));
  MPICHECK(MPI_Comm_size(node, local_size));
  MPICHECK(MPI_Comm_free(&node));
}

int run_ranks(int nranks, int ngpus, const example_options *opts, example_fn fn)
{
  int world_rank, world_size, local_rank, local_size;
  MPICHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
  MPICHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
  if (nranks != world_size) {
    print_error("run_ranks: %d ranks requested but MPI started %d\n", nranks,
                world_size);
    job_abort(1);
  }
  node_local_rank(&local_rank, &local_size);
  int shared_here = local_size > ngpus, shared_anywhere = 0;
  MPICHECK(MPI_Allreduce(&shared_here, &shared_anywhere, 1, MPI_INT, MPI_MAX,
                         MPI_COMM_WORLD));

  run_state run = {0};
  rank_ctx ctx = {.rank = world_rank,
                  .nranks = world_size,
                  .device = local_rank % ngpus,
                  .ngpus = ngpus,
                  .gpu_shared = shared_anywhere,
                  .ranks_are_threads = 0,
                  .opts = opts,
                  .run = &run};
  this_rank = world_rank;
  int status = fn(&ctx);
  return rank_max(&ctx, status); /* every process exits with the same status */
}

/* Every rank checks that it has a GPU of its own, or may share one; if any
 * rank may not, every rank says why it stops. Sets *ngpus to the GPUs this
 * rank sees and, on rank 0, prints the shared-GPU line when its node shares.
 * Returns 0 or the exit status to stop with. */
static int check_gpus(int *ngpus_out)
{
  int local_rank, local_size, ngpus = 0;
  node_local_rank(&local_rank, &local_size);
  cudaError_t err = count_gpus(&ngpus);
  *ngpus_out = ngpus;
  enum gpu_sharing sharing = GPU_ONE_RANK_EACH;
  if (err == cudaSuccess)
    sharing = decide_gpu_sharing(local_size, ngpus);
  int problem = err != cudaSuccess           ? EXIT_FAILURE
                : sharing == GPU_TOO_FEW     ? EXIT_USAGE
                : sharing == GPU_SHARING_BAD ? EXIT_USAGE
                                             : EXIT_SUCCESS;
  int worst = problem;
  MPICHECK(
      MPI_Allreduce(&problem, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  if (worst == EXIT_SUCCESS) {
    if (sharing != GPU_SHARED)
      return EXIT_SUCCESS;
    /* Every process sets its own NCCL_MAX_CTAS; rank 0 says so. */
    int world_rank;
    MPICHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
    if (world_rank == 0)
      say_gpus_shared(local_size, ngpus);
    fit_shared_gpu_kernels(local_size, ngpus, local_rank % ngpus,
                           world_rank == 0);
    return EXIT_SUCCESS;
  }

  char host[MPI_MAX_PROCESSOR_NAME] = "?";
  int len = 0;
  MPI_Get_processor_name(host, &len);
  if (problem == EXIT_FAILURE) {
    report_no_gpu(err);
    return worst;
  }
  if (sharing == GPU_TOO_FEW)
    print_error("node-local rank %d of %d on %s: only %d GPU(s) visible"
                " there; one rank per GPU, so start at most %d rank(s)"
                " per node%s\n",
                local_rank, local_size, host, ngpus, ngpus, shared_gpu_hint());
  else if (problem == EXIT_SUCCESS)
    print_error("stopping: another rank has no GPU of its own (see its"
                " message)\n");
  return worst;
}

int run_example(int argc, char *argv[], example_fn fn)
{
  MPICHECK(MPI_Init(&argc, &argv));
  /* Return MPI errors to MPICHECK so they are reported with file and line. */
  MPICHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  int world_rank, world_size;
  MPICHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
  MPICHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
  this_rank = world_rank;

  example_options opts;
  int status = EXIT_SUCCESS;
  switch (parse_options(argc, argv, &opts, world_rank != 0)) {
  case PARSE_HELP: status = EXIT_SUCCESS; goto done;
  case PARSE_BAD: status = EXIT_USAGE; goto done;
  case PARSE_OK: break;
  }
  set_program_name(opts.prog);
  if (!count_fits(opts.count, world_size)) {
    if (world_rank == 0) {
      print_error("count %zu is too large for %d ranks: %zu x %d x 4 bytes"
                  " does not fit in memory addresses\n",
                  opts.count, world_size, opts.count, world_size);
    }
    status = EXIT_USAGE;
    goto done;
  }
  int ngpus = 0;
  status = check_gpus(&ngpus);
  if (status != EXIT_SUCCESS)
    goto done;

  if (world_rank == 0) {
    printf("Number of processes: %d\n", world_size);
    fflush(stdout);
  }
  status = run_ranks(world_size, ngpus, &opts, fn);
  if (world_rank == 0 && status == EXIT_SUCCESS)
    printf("\nAll NCCL communicators finalized successfully!\n");

done:
  fflush(stdout);
  MPICHECK(MPI_Finalize());
  return status;
}
#endif
