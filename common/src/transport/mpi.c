/* The MPI transport: ranks are processes; MPI carries the exchanges. MPI
 * stays private to this file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "bootstrap.h"
#include "checks.h"
#include "requirements.h"
#include "transport.h"

/* Like CUDACHECK and NCCLCHECK (checks.h), for MPI calls. */
#define MPICHECK(call)                                                         \
  do {                                                                         \
    call_begin(#call, __FILE__, __LINE__);                                     \
    int mpi_err_ = (call);                                                     \
    call_end();                                                                \
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

struct run_state {
  // cppcheck-suppress unusedStructMember
  int unused; /* MPI_COMM_WORLD holds everything; kept for one interface */
};

void util_broadcast(int root, const rank_ctx *ctx, ncclUniqueId *id)
{
  (void)ctx;
  MPICHECK(MPI_Bcast(id, sizeof *id, MPI_BYTE, root, MPI_COMM_WORLD));
}

void all_ranks_gather(const rank_ctx *ctx, const void *mine, size_t size,
                      void *all)
{
  (void)ctx;
  MPICHECK(MPI_Gather(mine, (int)size, MPI_BYTE, all, (int)size, MPI_BYTE, 0,
                      MPI_COMM_WORLD));
}

int all_ranks_max(const rank_ctx *ctx, int value)
{
  (void)ctx;
  return transport_worst(value);
}

_Noreturn void job_abort(int status)
{
  flush_stdout_if_free();
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
  int shared_anywhere = transport_worst(local_size > ngpus);

  run_state run = {0};
  rank_ctx ctx = {.rank = world_rank,
                  .nranks = world_size,
                  .device = local_rank % ngpus,
                  .ngpus = ngpus,
                  .gpu_shared = shared_anywhere,
                  .ranks_are_threads = 0,
                  .opts = opts,
                  .example = example,
                  .run = &run};
  set_error_rank(world_rank);
  int status = fn(&ctx);
  return all_ranks_max(&ctx,
                       status); /* every process exits with the same status */
}

/* ------------------------------------------------ for the driver */

/* The watchdog's own communicator (a copy of MPI_COMM_WORLD), so that its
 * messages never meet the ranks' own; MPI_COMM_NULL where MPI cannot be
 * called from a second thread. */
static MPI_Comm watchdog_comm = MPI_COMM_NULL;
enum { TAG_ASK = 1, TAG_ANSWER = 2 };

void transport_start(int *argc, char ***argv)
{
  on_fatal_error(job_abort);
  int provided = MPI_THREAD_SINGLE;
  MPICHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
  /* Return MPI errors to MPICHECK so they are reported with file and line. */
  MPICHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  if (provided == MPI_THREAD_MULTIPLE)
    MPICHECK(MPI_Comm_dup(MPI_COMM_WORLD, &watchdog_comm));
  set_error_rank(transport_process());
}

void transport_stop(void)
{
  fflush(stdout);
  if (watchdog_comm != MPI_COMM_NULL)
    MPICHECK(MPI_Comm_free(&watchdog_comm));
  MPICHECK(MPI_Finalize());
}

/* From the watchdog's thread: its errors are not worth a report of their
 * own (the job is ending), so these calls are not checked one by one. */
int transport_peers(void)
{
  int size = 1;
  if (watchdog_comm == MPI_COMM_NULL)
    return 0;
  MPI_Comm_size(watchdog_comm, &size);
  return size - 1;
}

void transport_ask_peers(void)
{
  static int ask; /* the buffer of every send: must outlive them */
  MPI_Request request;
  const int processes = transport_peers() + 1;
  for (int p = 0; p < processes; p++) {
    if (p == transport_process())
      continue;
    MPI_Isend(&ask, 1, MPI_INT, p, TAG_ASK, watchdog_comm, &request);
    MPI_Request_free(&request); /* MPI_Abort follows: never waited for */
  }
}

/* Is a watchdog message with this tag waiting? (Never blocks.) */
static int waiting(int tag, MPI_Status *st)
{
  int flag = 0;
  return watchdog_comm != MPI_COMM_NULL &&
         MPI_Iprobe(MPI_ANY_SOURCE, tag, watchdog_comm, &flag, st) ==
             MPI_SUCCESS &&
         flag;
}

int transport_asked_by(void)
{
  int ask;
  MPI_Status st;
  if (!waiting(TAG_ASK, &st))
    return -1;
  MPI_Recv(&ask, 1, MPI_INT, st.MPI_SOURCE, TAG_ASK, watchdog_comm,
           MPI_STATUS_IGNORE);
  return st.MPI_SOURCE;
}

void transport_answer(int process, const char *lines)
{
  MPI_Send(lines, (int)strlen(lines) + 1, MPI_CHAR, process, TAG_ANSWER,
           watchdog_comm);
}

int transport_answer_from(char *lines, int size)
{
  int len = 0;
  MPI_Status st;
  if (!waiting(TAG_ANSWER, &st))
    return -1;
  MPI_Get_count(&st, MPI_CHAR, &len);
  char *text = malloc(len > 0 ? (size_t)len : 1);
  if (text == NULL)
    return -1;
  MPI_Recv(text, len, MPI_CHAR, st.MPI_SOURCE, TAG_ANSWER, watchdog_comm,
           MPI_STATUS_IGNORE);
  snprintf(lines, (size_t)size, "%.*s", len, text);
  free(text);
  return st.MPI_SOURCE;
}

int transport_process(void)
{
  int rank;
  MPICHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  return rank;
}

int transport_rank_count(int ngpus, int *nranks)
{
  (void)ngpus;
  MPICHECK(MPI_Comm_size(MPI_COMM_WORLD, nranks));
  return 0;
}

/* The node-local rank picks the GPU, so multi-node jobs work. */
void transport_node(int nranks, int *local_rank, int *local_size)
{
  (void)nranks;
  MPI_Comm node;
  MPICHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED,
                               transport_process(), MPI_INFO_NULL, &node));
  MPICHECK(MPI_Comm_rank(node, local_rank));
  MPICHECK(MPI_Comm_size(node, local_size));
  MPICHECK(MPI_Comm_free(&node));
}

int transport_worst(int value)
{
  int max = value;
  MPICHECK(MPI_Allreduce(&value, &max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  return max;
}

void transport_too_few_gpus(int local_rank, int local_size, int ngpus)
{
  char host[MPI_MAX_PROCESSOR_NAME] = "?";
  int len = 0;
  MPI_Get_processor_name(host, &len);
  print_error("node-local rank %d of %d on %s: only %d GPU(s) visible"
              " there; one rank per GPU, so start at most %d rank(s)"
              " per node%s\n",
              local_rank, local_size, host, ngpus, ngpus, shared_gpu_hint());
}

void transport_banner(int nranks, int ngpus)
{
  (void)ngpus;
  printf("Number of processes: %d\n", nranks);
}

void transport_my_ranks(int nranks, int *first, int *count)
{
  (void)nranks;
  *first = transport_process();
  *count = 1;
}
