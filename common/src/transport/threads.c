/* The pthread transport: ranks are threads of this process. Their shared
 * state lives in a run_state owned by run_ranks, handed to each rank
 * through its ctx. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap.h"
#include "checks.h"
#include "options.h"
#include "requirements.h"
#include "transport.h"

struct run_state {
  int nranks;
  pthread_barrier_t barrier;
  ncclUniqueId id;      /* broadcast slot */
  unsigned char *slots; /* gather slots: nranks * ALL_RANKS_GATHER_MAX */
  int *values;          /* one int per rank for all_ranks_max */
};

/* Waits for every rank at the run's barrier; `who` names the collective
 * and file:line its caller, for the watchdog. */
static void wait_all(run_state *run, const char *who, const char *file,
                     int line)
{
  watch_begin_wait(who, file, line);
  int err = pthread_barrier_wait(&run->barrier);
  watch_end();
  if (err != 0 && err != PTHREAD_BARRIER_SERIAL_THREAD) {
    print_error("pthread_barrier_wait failed: %s\n", strerror(err));
    job_abort(1);
  }
}

void util_broadcast_at(int root, const rank_ctx *ctx, ncclUniqueId *id,
                       const char *file, int line)
{
  run_state *run = ctx->run;
  if (ctx->rank == root)
    run->id = *id;
  wait_all(run, "util_broadcast", file, line);
  if (ctx->rank != root)
    *id = run->id;
  /* The slot may be reused only after everyone has read it. */
  wait_all(run, "util_broadcast", file, line);
}

void all_ranks_gather_at(const rank_ctx *ctx, const void *mine, size_t size,
                         void *all, const char *file, int line)
{
  run_state *run = ctx->run;
  if (size > ALL_RANKS_GATHER_MAX) { /* a caller's mistake, not a user's */
    print_error("all_ranks_gather: %zu bytes per rank, at most %d\n", size,
                ALL_RANKS_GATHER_MAX);
    job_abort(1);
  }
  memcpy(run->slots + (size_t)ctx->rank * ALL_RANKS_GATHER_MAX, mine, size);
  wait_all(run, "all_ranks_gather", file, line);
  if (ctx->rank == 0)
    for (int r = 0; r < run->nranks; r++)
      memcpy((unsigned char *)all + (size_t)r * size,
             run->slots + (size_t)r * ALL_RANKS_GATHER_MAX, size);
  wait_all(run, "all_ranks_gather", file, line);
}

int all_ranks_max_at(const rank_ctx *ctx, int value, const char *file, int line)
{
  run_state *run = ctx->run;
  run->values[ctx->rank] = value;
  wait_all(run, "all_ranks_max", file, line);
  int max = run->values[0];
  for (int r = 1; r < run->nranks; r++)
    if (run->values[r] > max)
      max = run->values[r];
  wait_all(run, "all_ranks_max", file, line);
  return max;
}

_Noreturn void job_abort(int status)
{
  flush_stdout_if_free();
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
  set_error_rank(t->ctx.rank);
  t->status = t->fn(&t->ctx);
  set_error_rank(-1);
  return NULL;
}

int run_ranks(int nranks, int ngpus, const example_options *opts, example_fn fn,
              const example_desc *example)
{
  watch_rank(-1); /* rank 0's thread is rank 0 from here on */
  run_state run = {.nranks = nranks};
  run.slots = host_calloc((size_t)nranks, ALL_RANKS_GATHER_MAX);
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
                                .ranks_per_gpu = (nranks + ngpus - 1) / ngpus,
                                .ranks_are_threads = 1,
                                .opts = opts,
                                .example = example,
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

/* ------------------------------------------------ for the driver */

void transport_start(int *argc, char ***argv)
{
  (void)argc;
  (void)argv;
  on_fatal_error(job_abort);
  watch_rank(0); /* the setup, until the ranks' threads start */
}

void transport_stop(void) {}

int transport_process(void) { return 0; }

int transport_rank_count(int ngpus, int *nranks)
{
  const char *env = getenv("NTHREADS");
  *nranks = ngpus;
  if (env == NULL || parse_thread_count(env, nranks) == 0)
    return 0;
  if (env[0] >= '1' && env[0] <= '9' && env[strspn(env, "0123456789")] == '\0')
    print_error("invalid NTHREADS='%s': at most %d ranks run as threads of"
                " one process\n",
                env, NTHREADS_MAX);
  else if (ngpus > 0)
    print_error("invalid NTHREADS='%s': use a whole number from 1 to %d"
                " (the number of visible GPUs)\n",
                env, ngpus);
  else
    print_error("invalid NTHREADS='%s': use a whole number from 1 to"
                " the number of visible GPUs\n",
                env);
  return EXIT_USAGE;
}

void transport_node(int nranks, int *local_rank, int *local_size)
{
  *local_rank = 0;
  *local_size = nranks;
}

int transport_worst_at(int value, const char *file, int line)
{
  (void)file, (void)line;
  return value;
}

int transport_gpu_load(int device, int ngpus, int local_size, char *who,
                       size_t who_size)
{
  (void)device;
  if (who_size > 0)
    who[0] = '\0';
  return (local_size + ngpus - 1) / ngpus;
}

void transport_too_few_gpus(int local_size, int ngpus, const char *who)
{
  (void)who;
  print_error("NTHREADS=%d asks for more ranks than GPUs: %d visible;"
              " one rank per GPU, so use NTHREADS=1..%d%s\n",
              local_size, ngpus, ngpus, shared_gpu_hint());
}

void transport_banner(int nranks, int ngpus)
{
  /* NCCL's examples' framework lines (docs/examples/common), as they
   * print them. */
  printf("Creating %d threads for %d devices\n", nranks, ngpus);
  printf("NCCL Example: One Device per Thread\n"
         "===================================\n");
}

void transport_my_ranks(int nranks, int *first, int *count)
{
  *first = 0;
  *count = nranks;
}
