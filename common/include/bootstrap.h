/*
 * Rank bootstrap: start one rank per GPU and let the ranks talk to each other
 * outside NCCL (hand out the ncclUniqueId, gather output lines, agree on the
 * exit status).
 *
 * Two builds share this interface:
 *   - pthread mode (default): one thread per GPU in one process; NTHREADS
 *     picks how many.
 *   - MPI mode (make MPI=1, common/src/transport/mpi.c): one process per GPU,
 * as many as mpirun starts; each uses the GPU of its node-local rank.
 *
 * Exit statuses of the programs (documented in the README):
 *   0  success
 *   1  run-time failure: no usable GPU, a CUDA/NCCL/MPI call failed, NCCL too
 *      old, or a result was wrong
 *   2  usage error: bad option or NTHREADS, or more ranks than GPUs
 *   3  the watchdog ended the job (EXIT_TIMEOUT, watchdog.h)
 */
#ifndef BOOTSTRAP_H
#define BOOTSTRAP_H

#include <stddef.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "options.h"

#define EXIT_USAGE 2

/* State shared by all ranks of one run (barrier, exchange slots). Owned by
 * the run; opaque to the examples. */
typedef struct run_state run_state;

/* The collective an example teaches: What ran names it, --bench measures
 * it. */
enum example_collective { COLLECTIVE_ALLREDUCE, COLLECTIVE_ALLGATHER };

typedef struct example_desc example_desc;

/* A lesson's own collective kernel (03_allreduce_lsa, 04_allreduce_fast):
 * --bench times it beside NCCL's collective, on the same windows, once per
 * variant (a mode of the bench each). setup and teardown are collective (a
 * device communicator on `comm`); run queues one operation of `count`
 * floats per rank on `stream`, in variant `variant`, on the windows from
 * the byte offsets given (--cold moves them each operation). */
#define DEVICE_KERNEL_MAX_VARIANTS 5
typedef struct rank_ctx rank_ctx;
typedef struct device_kernel {
  /* Collective: can the kernel run on comm? Each rank that cannot says
   * why, as the lesson does; then it is left out. */
  int (*usable)(const rank_ctx *ctx, ncclComm_t comm);
  void *(*setup)(const rank_ctx *ctx, ncclComm_t comm);
  void (*run)(void *state, int variant, ncclWindow_t send, size_t send_offset,
              ncclWindow_t recv, size_t recv_offset, size_t count,
              cudaStream_t stream);
  void (*teardown)(ncclComm_t comm, void *state);
  /* The variants, as the bench's modes: a name and what it is. None: one,
   * called "lsa", "the lesson's kernel on symmetric windows". */
  int nvariants;
  const char *names[DEVICE_KERNEL_MAX_VARIANTS];
  const char *texts[DEVICE_KERNEL_MAX_VARIANTS];
} device_kernel;

/* What one rank knows about itself. Read-only for the example. */
struct rank_ctx {
  int rank;                    /* NCCL rank: 0 .. nranks-1 */
  int nranks;                  /* ranks in the job */
  int device;                  /* CUDA device this rank drives */
  int ngpus;                   /* GPUs visible to this rank */
  int gpu_shared;              /* 1 on every rank if any GPU of the job runs
                                  several ranks (NCCL_MULTI_RANK_GPU_ENABLE) */
  int ranks_per_gpu;           /* the most ranks any GPU of this node runs */
  int ranks_are_threads;       /* 1: threads of one process; 0: processes */
  const example_options *opts; /* parsed command line, same on every rank */
  const example_desc *example; /* what runs (NULL in tests of run_ranks) */
  run_state *run;
};

/* The per-rank body of an example. Returns EXIT_SUCCESS or EXIT_FAILURE;
 * run_example's status is the worst status of any rank. */
typedef int (*example_fn)(const rank_ctx *ctx);

/* An example, as its main.c hands it to run_example: the lesson and what it
 * needs. */
struct example_desc {
  example_fn lesson;                  /* the per-rank NCCL lifecycle */
  int min_nccl;                       /* NCCL_VERSION(x, y, z) it needs */
  const char *needs;                  /* what needs that version, for messages */
  enum example_collective collective; /* the collective the lesson makes */
  int headers_bound; /* a device API lesson's NCCL_VERSION_CODE: a loaded
                        NCCL older than its nccl.h is refused, as NCCL's
                        device API refuses it (0: no bound) */
  const device_kernel *kernel; /* the lesson's own kernel, or NULL */
};

/* Parses the command line, checks that every rank has a GPU of its own (or
 * may share one: NCCL_MULTI_RANK_GPU_ENABLE=1 with NCCL >= 2.30) and that
 * the loaded NCCL is new enough, then runs the example's lesson (or, with
 * --bench, the benchmark of its collective) on every rank and returns the
 * exit status that every process agrees on. Usage errors return EXIT_USAGE
 * before any rank runs; -h prints the usage and returns 0. The driver is
 * common/src/driver.c; the transport it uses, threads or MPI, is chosen by
 * the Makefile. */
int run_example(int argc, char *argv[], const example_desc *example);

/* Runs fn on nranks ranks without looking for GPUs. A rank's device is its
 * node-local rank (the rank itself in pthread mode) modulo ngpus, so with
 * more ranks than ngpus several ranks share a device. In MPI mode nranks
 * must equal the MPI world size and MPI must already be initialized.
 * Every rank's ctx->example is `example`. run_example uses it; tests call it
 * directly. Returns the worst status of any rank. */
int run_ranks(int nranks, int ngpus, const example_options *opts, example_fn fn,
              const example_desc *example);

/* The collectives below are macros that pass the caller's file and line:
 * a rank waiting in one is reported by the watchdog at the caller's line
 * ("waiting for the other ranks in all_ranks_max (main.c:80)"). */

/* Collective: every rank passes its own id; afterwards every rank holds the
 * root's. */
#define util_broadcast(root, ctx, id)                                          \
  util_broadcast_at((root), (ctx), (id), __FILE__, __LINE__)
void util_broadcast_at(int root, const rank_ctx *ctx, ncclUniqueId *id,
                       const char *file, int line);

/* Collective: rank 0 receives every rank's `size` bytes from `mine`, in rank
 * order, into `all` (nranks * size bytes; ignored on other ranks).
 * size is at most ALL_RANKS_GATHER_MAX bytes. */
#define ALL_RANKS_GATHER_MAX 512
#define all_ranks_gather(ctx, mine, size, all)                                 \
  all_ranks_gather_at((ctx), (mine), (size), (all), __FILE__, __LINE__)
void all_ranks_gather_at(const rank_ctx *ctx, const void *mine, size_t size,
                         void *all, const char *file, int line);

/* Collective: returns the largest `value` any rank passed, on every rank. */
#define all_ranks_max(ctx, value)                                              \
  all_ranks_max_at((ctx), (value), __FILE__, __LINE__)
int all_ranks_max_at(const rank_ctx *ctx, int value, const char *file,
                     int line);

/* Collective: 1 on every rank if every rank passed a non-zero ok. */
#define all_ranks_ok(ctx, ok)                                                  \
  (all_ranks_max_at((ctx), !(ok), __FILE__, __LINE__) == 0)

/* Ends the whole job at once with `status`: MPI_Abort in MPI mode, so that no
 * peer hangs in a collective; the process exits in pthread mode. Output is
 * flushed first. Never returns. (Fatal errors reach it through checks.h's
 * fatal().) */
_Noreturn void job_abort(int status);

#endif
