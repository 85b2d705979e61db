/*
 * NCCL symmetric memory: AllReduce on registered windows
 *
 * Learning objectives
 *  - allocate buffers that peers can map, with ncclMemAlloc
 *  - register them as symmetric windows (collective; the same size on every
 *    rank, as NCCL < 2.30.7 requires) so NCCL can use symmetric algorithms
 *  - run an AllReduce on them, verify it, and tear everything down in the
 *    order the lifecycle requires
 *
 * Runs as one thread per GPU (NTHREADS=N ./allreduce_sm) or, built with
 * make MPI=1, one process per GPU (mpirun -np N ./allreduce_sm). The rank
 * bootstrap, error checks, ordered printing and verification live in
 * ../../common so that this file shows only the NCCL lifecycle.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "example.h"

static int allreduce_sm(const rank_ctx *ctx)
{
  const int my_rank = ctx->rank;
  const int total_ranks = ctx->nranks;

  /* STEP 1: Initialize the NCCL communicator ----------------------------- */
  print_root(ctx, "Starting AllReduce example with %d ranks\n", total_ranks);
  ncclUniqueId nccl_unique_id;
  if (my_rank == 0)
    NCCLCHECK(ncclGetUniqueId(&nccl_unique_id));
  util_broadcast(0, ctx, &nccl_unique_id);

  CUDACHECK(cudaSetDevice(ctx->device));
  ncclComm_t comm;
  NCCLCHECK(ncclCommInitRank(&comm, total_ranks, nccl_unique_id, my_rank));
  all_ranks_print(ctx, "  Rank %d communicator initialized using device %d\n",
                  my_rank, ctx->device);

  /* STEP 2: Allocate buffers with NCCL's allocator ------------------------
   * Symmetric windows need ncclMemAlloc memory (NCCL docs). A cudaMalloc
   * buffer: 2.30.7 refuses it; 2.28.3 at one rank hands back a local
   * registration, no window (docs/facts). */
  print_root(ctx, "Symmetric Memory allocation\n");
  const size_t count = ctx->opts->count;
  const size_t size_bytes = count * sizeof(float);
  all_ranks_print(ctx, "  Rank %d allocating %.2f MB per buffer\n", my_rank,
                  size_bytes / MiB);

  float *h_data = host_calloc(count, sizeof(float));
  float *h_result = host_calloc(count, sizeof(float));
  void *d_sendbuff;
  void *d_recvbuff;
  NCCLCHECK(ncclMemAlloc(&d_sendbuff, size_bytes));
  NCCLCHECK(ncclMemAlloc(&d_recvbuff, size_bytes));

  /* STEP 3: Register symmetric memory windows -----------------------------
   * Collective: every rank registers, or the others wait; the same size on
   * every rank, as NCCL < 2.30.7 requires (2.30.7+ allow sizes to differ).
   * NULL first: without symmetric support NCCL 2.28.3 returns success and
   * leaves the handle unwritten (its src/dev_runtime.cc), and a NULL handle
   * is one that ncclCommWindowDeregister accepts. */
  ncclWindow_t send_win = NULL;
  ncclWindow_t recv_win = NULL;
  NCCLCHECK(ncclCommWindowRegister(comm, d_sendbuff, size_bytes, &send_win,
                                   NCCL_WIN_COLL_SYMMETRIC));
  NCCLCHECK(ncclCommWindowRegister(comm, d_recvbuff, size_bytes, &recv_win,
                                   NCCL_WIN_COLL_SYMMETRIC));
  all_ranks_report_windows(ctx, send_win, recv_win);

  /* STEP 4: Initialize data: every element is the rank's number ----------
   * On the collective's stream: a copy from pageable memory may return
   * before its bytes land, and only the stream orders them before the
   * collective (a plain cudaMemcpy would run on this thread's own default
   * stream, which nothing orders with `stream`). */
  cudaStream_t stream;
  CUDACHECK(cudaStreamCreate(&stream));
  fill_floats(h_data, count, (float)my_rank);
  CUDACHECK(cudaMemcpyAsync(d_sendbuff, h_data, size_bytes,
                            cudaMemcpyHostToDevice, stream));
  all_ranks_print(ctx, "  Rank %d data initialized (value: %d)\n", my_rank,
                  my_rank);

  /* STEP 5: AllReduce (sum, out of place) on the windows ----------------- */
  print_root(ctx, "Starting AllReduce with %zu elements (%zu MB)\n", count,
             size_bytes / (1024 * 1024));
  NCCLCHECK(ncclAllReduce(d_sendbuff, d_recvbuff, count, ncclFloat, ncclSum,
                          comm, stream));
  CUDACHECK(cudaStreamSynchronize(stream));
  print_root(ctx, "AllReduce completed successfully\n");

  /* STEP 6: Verify: every element is 0 + 1 + ... + (ranks - 1) ----------- */
  CUDACHECK(
      cudaMemcpy(h_result, d_recvbuff, size_bytes, cudaMemcpyDeviceToHost));
  const float expected = (float)total_ranks * (float)(total_ranks - 1) / 2.0f;
  const int ok = verify_allreduce(ctx, h_result, count, expected);

  /* STEP 7: Clean up, in this order --------------------------------------
   * Deregister windows before freeing their memory: NCCL 2.28.3 and 2.30.7
   * let a window outlive its memory without a word (docs/facts). And
   * before destroying the comm: only from 2.29.7 does ncclCommDestroy free
   * the windows left registered. */
  free(h_data);
  free(h_result);
  NCCLCHECK(ncclCommWindowDeregister(comm, send_win));
  NCCLCHECK(ncclCommWindowDeregister(comm, recv_win));
  all_ranks_print(ctx, "  Rank %d symmetric memory windows deregistered\n",
                  my_rank);
  NCCLCHECK(ncclMemFree(d_sendbuff));
  NCCLCHECK(ncclMemFree(d_recvbuff));
  NCCLCHECK(ncclCommFinalize(comm));
  NCCLCHECK(ncclCommDestroy(comm));
  CUDACHECK(cudaStreamDestroy(stream));

  print_root(ctx, "All resources cleaned up successfully\n");
  if (!ok)
    return EXIT_FAILURE;
  print_root(ctx,
             "Example completed - demonstrated symmetric memory lifecycle\n");
  return EXIT_SUCCESS;
}

int main(int argc, char *argv[])
{
  /* The driver (common/) checks the GPUs and the loaded NCCL against this,
   * and runs --bench instead of the lesson when asked. */
  static const example_desc example = {
      .lesson = allreduce_sm,
      .min_nccl = NCCL_VERSION(2, 27, 0),
      .needs = "symmetric memory windows",
      .collective = COLLECTIVE_ALLREDUCE,
  };
  return run_example(argc, argv, &example);
}
