/* The rank bootstrap without GPUs: rank 0 makes a real ncclUniqueId,
 * util_broadcast hands it to every rank, and the gather, max and ordered
 * printing behave. Pthread build: `test_bootstrap N` runs N threads.
 * MPI build: `mpirun -np N test_bootstrap N`. An optional second argument
 * NGPUS checks the device a rank gets when ranks share GPUs. Exits 0 only if
 * all checks pass on every rank. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nccl.h>

#include "bootstrap.h"
#include "checks.h"
#include "output.h"

#ifdef USE_MPI
#include <mpi.h>
#endif

static int check_rank(const rank_ctx *ctx)
{
  int failures = 0;
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (ctx->rank == 0)
    NCCLCHECK(ncclGetUniqueId(&id));
  else
    memset(&id, 0xEE, sizeof id); /* must be overwritten */
  util_broadcast(0, ctx, &id);

  /* Rank 0 compares every rank's copy with its own. */
  unsigned char *all = malloc(sizeof id * (size_t)ctx->nranks);
  all_ranks_gather(ctx, &id, sizeof id, all);
  if (ctx->rank == 0) {
    static const ncclUniqueId zero;
    if (memcmp(&id, &zero, sizeof id) == 0) {
      fprintf(stderr, "ncclGetUniqueId returned an all-zero id\n");
      failures++;
    }
    for (int r = 0; r < ctx->nranks; r++)
      if (memcmp(all + (size_t)r * sizeof id, &id, sizeof id) != 0) {
        fprintf(stderr, "rank %d holds a different unique id\n", r);
        failures++;
      }
  }
  free(all);

  /* Broadcasts in a row, the root changing: each rank gets each round's
   * id (the slot is reused only once every rank has read it). */
  for (int round = 0; round < 100; round++) {
    const int root = round % ctx->nranks;
    const unsigned char want = (unsigned char)(round + 1);
    ncclUniqueId next;
    memset(&next, ctx->rank == root ? want : 0xEE, sizeof next);
    util_broadcast(root, ctx, &next);
    if (memchr(&next, 0xEE, sizeof next) != NULL ||
        ((unsigned char *)&next)[sizeof next - 1] != want) {
      fprintf(stderr, "rank %d: broadcast %d from rank %d gave byte %d\n",
              ctx->rank, round, root, ((unsigned char *)&next)[sizeof next - 1]);
      failures++;
      break;
    }
  }

  if (all_ranks_max(ctx, ctx->rank * 10) != (ctx->nranks - 1) * 10) {
    fprintf(stderr, "rank %d: all_ranks_max is wrong\n", ctx->rank);
    failures++;
  }
  if (all_ranks_ok(ctx, 1) != 1 ||
      all_ranks_ok(ctx, ctx->rank != ctx->nranks - 1) != 0) {
    fprintf(stderr, "rank %d: all_ranks_ok is wrong\n", ctx->rank);
    failures++;
  }
  /* One host: the node-local rank (which picks the GPU) is the rank, and
   * with fewer GPUs than ranks they are shared round-robin. */
  if (ctx->device != ctx->rank % ctx->ngpus ||
      ctx->gpu_shared != (ctx->nranks > ctx->ngpus)) {
    fprintf(stderr, "rank %d of %d on %d GPU(s) got device %d, shared %d\n",
            ctx->rank, ctx->nranks, ctx->ngpus, ctx->device, ctx->gpu_shared);
    failures++;
  }
  all_ranks_print(ctx, "line from rank %d\n", ctx->rank);
  all_ranks_print_line(ctx, ctx->rank % 2 ? "odd rank speaks\n" : "");
  return all_ranks_max(ctx, failures) == 0 ? 0 : 1;
}

int main(int argc, char *argv[])
{
  int nranks = argc > 1 ? atoi(argv[1]) : 0;
  int ngpus = argc > 2 ? atoi(argv[2]) : 0;
#ifdef USE_MPI
  MPI_Init(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
#endif
  if (ngpus < 1)
    ngpus = nranks;
  if (nranks < 1) {
    fprintf(stderr, "usage: test_bootstrap NRANKS [NGPUS]\n");
    return 2;
  }
  example_options opts = {.prog = "test_bootstrap", .count = 1};
  int status = run_ranks(nranks, ngpus, &opts, check_rank, NULL);
#ifdef USE_MPI
  MPI_Finalize();
#endif
  return status;
}
