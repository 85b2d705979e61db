/* The MPI transport: ranks are processes; MPI carries the exchanges. MPI
 * stays private to this file. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "bootstrap.h"
#include "checks.h"
#include "requirements.h"
#include "transport.h"

static int gpu_load; /* the node's ranks on its busiest GPU, once known */

/* Like CUDACHECK and NCCLCHECK (checks.h), for MPI calls. */
#define MPICHECK(call)                                                         \
  do {                                                                         \
    watch_begin(#call, __FILE__, __LINE__);                                    \
    int mpi_err_ = (call);                                                     \
    watch_end();                                                               \
    if (mpi_err_ != MPI_SUCCESS)                                               \
      fail_mpi(__FILE__, __LINE__, #call, mpi_err_);                           \
  } while (0)

static _Noreturn void fail_mpi(const char *file, int line, const char *call,
                               int err)
{
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(err, text, &len) != MPI_SUCCESS)
    snprintf(text, sizeof text, "MPI error %d", err);
  fail_call(file, line, call, text);
}

/* Like MPICHECK, for the collectives the ranks wait in: the watchdog sees
 * a wait for the other ranks, at the caller's file and line. */
#define MPI_WAIT_CHECK(name, file, line, call)                                 \
  do {                                                                         \
    watch_begin_wait(name, file, line);                                        \
    int mpi_err_ = (call);                                                     \
    watch_end();                                                               \
    if (mpi_err_ != MPI_SUCCESS)                                               \
      fail_mpi(file, line, #call, mpi_err_);                                   \
  } while (0)

/* Known from transport_start on, so that job_abort, from any thread,
 * knows without calling MPI. */
static int my_process;
static int thread_multiple;   /* MPI_THREAD_MULTIPLE was provided */
static volatile int finalizing; /* MPI_Finalize has begun */
static pthread_t main_thread; /* the thread that called MPI_Init_thread */

/* MPI_COMM_WORLD holds everything: ranks get no run_state (ctx->run). */

void util_broadcast_at(int root, const rank_ctx *ctx, ncclUniqueId *id,
                       const char *file, int line)
{
  (void)ctx;
  MPI_WAIT_CHECK("util_broadcast", file, line,
                 MPI_Bcast(id, sizeof *id, MPI_BYTE, root, MPI_COMM_WORLD));
}

void all_ranks_gather_at(const rank_ctx *ctx, const void *mine, size_t size,
                         void *all, const char *file, int line)
{
  (void)ctx;
  MPI_WAIT_CHECK("all_ranks_gather", file, line,
                 MPI_Gather(mine, (int)size, MPI_BYTE, all, (int)size, MPI_BYTE,
                            0, MPI_COMM_WORLD));
}

static int worst_at(const char *name, int value, const char *file, int line)
{
  int max = value;
  MPI_WAIT_CHECK(
      name, file, line,
      MPI_Allreduce(&value, &max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  return max;
}

int all_ranks_max_at(const rank_ctx *ctx, int value, const char *file, int line)
{
  (void)ctx;
  return worst_at("all_ranks_max", value, file, line);
}

_Noreturn void job_abort(int status)
{
  flush_stdout_if_free();
  /* Without MPI_THREAD_MULTIPLE only the main thread may call MPI: another
   * thread (the watchdog's) ends this process alone; mpirun then ends the
   * job, since a process left without MPI_Finalize. */
  if (!thread_multiple && !pthread_equal(pthread_self(), main_thread))
    _exit(status);
  /* No MPI_Abort beside an MPI_Finalize in progress (the watchdog ends a
   * stuck one): this process ends alone, and mpirun ends the job. */
  if (finalizing)
    _exit(status);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized)
    MPI_Abort(MPI_COMM_WORLD, status); /* ends every process of the job */
  _exit(status);
}

int run_ranks(int nranks, int ngpus, const example_options *opts, example_fn fn,
              const example_desc *example)
{
  int world_rank, world_size, local_rank, local_size;
  MPICHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
  MPICHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
  if (nranks != world_size) {
    print_error("run_ranks: %d ranks requested but MPI started %d\n", nranks,
                world_size);
    job_abort(1);
  }
  transport_node(nranks, &local_rank, &local_size);
  /* The node's GPU load (check_job measured it; else as if every process
   * saw the same GPUs). */
  int per_gpu = gpu_load ? gpu_load : (local_size + ngpus - 1) / ngpus;
  int shared_anywhere = transport_worst(per_gpu > 1);

  rank_ctx ctx = {.rank = world_rank,
                  .nranks = world_size,
                  .device = local_rank % ngpus,
                  .ngpus = ngpus,
                  .gpu_shared = shared_anywhere,
                  .ranks_per_gpu = per_gpu,
                  .ranks_are_threads = 0,
                  .opts = opts,
                  .example = example,
                  .run = NULL};
  set_error_rank(world_rank);
  int status = fn(&ctx);
  return all_ranks_max(&ctx,
                       status); /* every process exits with the same status */
}

/* ------------------------------------------------ for the driver */

void transport_start(int *argc, char ***argv)
{
  on_fatal_error(job_abort);
  main_thread = pthread_self();
  int provided = MPI_THREAD_SINGLE;
  MPICHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
  /* Return MPI errors to MPICHECK so they are reported with file and line. */
  MPICHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MPICHECK(MPI_Comm_rank(MPI_COMM_WORLD, &my_process));
  thread_multiple = provided == MPI_THREAD_MULTIPLE;
  set_error_rank(my_process);
}

void transport_stop(void)
{
  fflush(stdout);
  finalizing = 1;
  MPICHECK(MPI_Finalize());
}

int transport_process(void) { return my_process; }

int transport_rank_count(int ngpus, int *nranks)
{
  (void)ngpus;
  MPICHECK(MPI_Comm_size(MPI_COMM_WORLD, nranks));
  return 0;
}

/* The processes of this node (free it with MPI_Comm_free). */
static MPI_Comm node_comm(void)
{
  MPI_Comm node;
  MPI_WAIT_CHECK("MPI_Comm_split_type", __FILE__, __LINE__,
                 MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED,
                                     my_process, MPI_INFO_NULL, &node));
  return node;
}

/* The node-local rank picks the GPU, so multi-node jobs work. */
void transport_node(int nranks, int *local_rank, int *local_size)
{
  (void)nranks;
  MPI_Comm node = node_comm();
  MPICHECK(MPI_Comm_rank(node, local_rank));
  MPICHECK(MPI_Comm_size(node, local_size));
  MPICHECK(MPI_Comm_free(&node));
}

int transport_worst_at(int value, const char *file, int line)
{
  return worst_at("transport_worst", value, file, line);
}

/* The node's ranks, each with the UUID of its GPU; who lists those that
 * share one under its first user: "ranks 0 and 2 use GPU-...". */
int transport_gpu_load(int device, int ngpus, int local_size, char *who,
                       size_t who_size)
{
  (void)ngpus;
  struct user {
    int rank;
    unsigned char uuid[16];
    char text[48]; /* as nvidia-smi -L writes it */
  } me = {.rank = my_process}, *all = host_calloc((size_t)local_size,
                                                   sizeof me);
  struct cudaDeviceProp prop;
  CUDACHECK(cudaGetDeviceProperties(&prop, device));
  memcpy(me.uuid, prop.uuid.bytes, 16);
  for (int i = 0, len = snprintf(me.text, 5, "GPU-"); i < 16; i++)
    len += snprintf(me.text + len, sizeof me.text - (size_t)len, "%s%02x",
                    i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "",
                    me.uuid[i]);
  MPI_Comm node = node_comm();
  MPI_WAIT_CHECK("MPI_Allgather", __FILE__, __LINE__,
                 MPI_Allgather(&me, (int)sizeof me, MPI_BYTE, all,
                               (int)sizeof me, MPI_BYTE, node));
  MPICHECK(MPI_Comm_free(&node));
  size_t len = 0;
  gpu_load = 0;
  for (int i = 0; i < local_size; i++) {
    int same = 0, earlier = 0, listed = 0;
    for (int j = 0; j < local_size; j++)
      if (memcmp(all[j].uuid, all[i].uuid, 16) == 0)
        same++, earlier |= j < i;
    gpu_load = same > gpu_load ? same : gpu_load;
    for (int j = i; same > 1 && !earlier && j < local_size; j++)
      if (memcmp(all[j].uuid, all[i].uuid, 16) == 0 && len < who_size)
        len += (size_t)snprintf(who + len, who_size - len, "%s%d",
                                listed++ == 0 ? (len ? "; ranks " : "ranks ")
                                : listed < same ? ", "
                                                : " and ",
                                all[j].rank);
    if (same > 1 && !earlier && len < who_size)
      len += (size_t)snprintf(who + len, who_size - len, " use %s",
                              all[i].text);
  }
  if (len == 0 && who_size > 0)
    who[0] = '\0';
  free(all);
  return gpu_load;
}

void transport_too_few_gpus(int local_size, int ngpus, const char *who)
{
  char host[MPI_MAX_PROCESSOR_NAME] = "?";
  int len = 0;
  MPI_Get_processor_name(host, &len);
  print_error("%d ranks on %s share GPUs (%s); one rank per GPU: give each"
              " rank a GPU of its own (Slurm's --gpus-per-task=1, or"
              " CUDA_VISIBLE_DEVICES), or start at most %d rank(s) per node"
              " where each process sees %d GPU(s)%s\n",
              local_size, host, who, ngpus, ngpus, shared_gpu_hint());
}

void transport_banner(int nranks, int ngpus)
{
  /* NCCL's examples' framework lines (docs/examples/common), as they
   * print them; every process has initialized MPI by now (it took part in
   * the option check), so process 0 says so for each, in rank order. */
  (void)ngpus;
  printf("Number of processes: %d\n", nranks);
  for (int r = 0; r < nranks; r++)
    printf("MPI initialized: rank %d of %d\n", r, nranks);
  printf("NCCL Example: One Device per Process\n"
         "====================================\n");
}

void transport_my_ranks(int nranks, int *first, int *count)
{
  (void)nranks;
  *first = transport_process();
  *count = 1;
}
