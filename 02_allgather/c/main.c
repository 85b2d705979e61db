/*
 * NCCL symmetric memory + copy engine: AllGather with zero SMs
 *
 * Learning objectives
 *  - ask NCCL to use no SMs for collectives (ncclConfig_t.CTAPolicy =
 *    NCCL_CTA_POLICY_ZERO, NCCL >= 2.28), so compute keeps the whole GPU
 *  - register send and receive buffers as symmetric windows: with them an
 *    AllGather inside one NVLink domain can run on the copy engines
 *  - verify every rank's segment and tear down in the required order
 *
 * Runs as one thread per GPU (NTHREADS=N ./allgather_ce) or, built with
 * make MPI=1, one process per GPU (mpirun -np N ./allgather_ce). The rank
 * bootstrap, error checks, ordered printing and verification live in
 * ../../common so that this file shows only the NCCL lifecycle.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "example.h"

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 28, 3)
/* NCCL_CTA_POLICY_ZERO is new in NCCL 2.28's nccl.h; 2.28.3 is the first
 * 2.28 release (pip index versions nvidia-nccl-cu13). */
#error "nccl.h is older than 2.28.3: allgather_ce needs NCCL >= 2.28.3"
#endif

static int allgather_ce(const rank_ctx *ctx)
{
  const int my_rank = ctx->rank;
  const int total_ranks = ctx->nranks;

  /* STEP 1: Initialize the communicator with the copy-engine policy ------ */
  print_root(ctx,
             "Starting AllGather example with %d ranks (Copy Engine enabled)\n",
             total_ranks);
  ncclUniqueId nccl_unique_id;
  if (my_rank == 0)
    NCCLCHECK(ncclGetUniqueId(&nccl_unique_id));
  util_broadcast(0, ctx, &nccl_unique_id);

  CUDACHECK(cudaSetDevice(ctx->device));
  /* CTAPolicy ZERO (= 2) lets NCCL use the copy engines. NCCL_CTA_POLICY in
   * the environment replaces it (docs/troubleshooting.md: per version). */
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.CTAPolicy = NCCL_CTA_POLICY_ZERO;
  ncclComm_t comm;
  NCCLCHECK(ncclCommInitRankConfig(&comm, total_ranks, nccl_unique_id, my_rank,
                                   &config));
  all_ranks_print(
      ctx,
      "  Rank %d communicator initialized using device %d (CTAPolicy=%d)\n",
      my_rank, ctx->device, config.CTAPolicy);

  /* STEP 2: Allocate buffers with NCCL's allocator ------------------------
   * The receive buffer holds every rank's segment: count * ranks floats. */
  print_root(ctx, "Symmetric Memory allocation\n");
  const size_t sendcount = ctx->opts->count;
  const size_t send_size_bytes = sendcount * sizeof(float);
  const size_t recv_size_bytes = send_size_bytes * (size_t)total_ranks;
  all_ranks_print(
      ctx, "  Rank %d allocating %.2f MB send buffer, %.2f MB recv buffer\n",
      my_rank, send_size_bytes / MiB, recv_size_bytes / MiB);

  float *h_data = host_calloc(sendcount, sizeof(float));
  float *h_result = host_calloc(sendcount * (size_t)total_ranks, sizeof(float));
  void *d_sendbuff;
  void *d_recvbuff;
  NCCLCHECK(ncclMemAlloc(&d_sendbuff, send_size_bytes));
  NCCLCHECK(ncclMemAlloc(&d_recvbuff, recv_size_bytes));

  /* STEP 3: Register symmetric memory windows -----------------------------
   * Collective; the same sizes on every rank, as NCCL < 2.30.7 requires.
   * NULL first: NCCL 2.28.3 can return success without writing the handle
   * (see 01_allreduce). */
  ncclWindow_t send_win = NULL;
  ncclWindow_t recv_win = NULL;
  NCCLCHECK(ncclCommWindowRegister(comm, d_sendbuff, send_size_bytes, &send_win,
                                   NCCL_WIN_COLL_SYMMETRIC));
  NCCLCHECK(ncclCommWindowRegister(comm, d_recvbuff, recv_size_bytes, &recv_win,
                                   NCCL_WIN_COLL_SYMMETRIC));
  all_ranks_report_windows(ctx, send_win, recv_win);

  /* STEP 4: Initialize data: every element is the rank's number ----------
   * On the collective's stream, which orders the copy before the AllGather
   * (see 01_allreduce). */
  cudaStream_t stream;
  CUDACHECK(cudaStreamCreate(&stream));
  fill_floats(h_data, sendcount, (float)my_rank);
  CUDACHECK(cudaMemcpyAsync(d_sendbuff, h_data, send_size_bytes,
                            cudaMemcpyHostToDevice, stream));
  all_ranks_print(ctx, "  Rank %d data initialized (value: %d)\n", my_rank,
                  my_rank);

  /* STEP 5: AllGather on the windows --------------------------------------
   * With symmetric windows and CTAPolicy ZERO, NCCL can use the copy
   * engines; run with NCCL_DEBUG=INFO to see which path it chose. */
  print_root(ctx,
             "Starting AllGather with %zu elements per rank (%zu MB total)\n",
             sendcount, recv_size_bytes / (1024 * 1024));
  NCCLCHECK(ncclAllGather(d_sendbuff, d_recvbuff, sendcount, ncclFloat, comm,
                          stream));
  CUDACHECK(cudaStreamSynchronize(stream));
  print_root(ctx, "AllGather completed successfully\n");

  /* STEP 6: Verify: segment r holds rank r's value everywhere ------------ */
  CUDACHECK(cudaMemcpy(h_result, d_recvbuff, recv_size_bytes,
                       cudaMemcpyDeviceToHost));
  const int ok = verify_allgather_segments(ctx, h_result, sendcount);

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
  print_root(
      ctx,
      "Example completed - demonstrated symmetric memory + copy engine allgather\n");
  return EXIT_SUCCESS;
}

int main(int argc, char *argv[])
{
  /* The driver (common/) checks the GPUs and the loaded NCCL against this,
   * and runs --bench instead of the lesson when asked. */
  static const example_desc example = {
      .lesson = allgather_ce,
      .min_nccl = NCCL_VERSION(2, 28, 3),
      .needs = "the copy-engine policy (CTAPolicy ZERO)",
      .collective = COLLECTIVE_ALLGATHER,
  };
  return run_example(argc, argv, &example);
}
