/*
 * NCCL device API: an AllReduce written as your own kernel (LSA)
 *
 * Learning objectives
 *  - ask a communicator whether its kernels may use the device API
 *    (ncclCommQueryProperties) and whether every rank can reach every other
 *    rank's memory with plain loads and stores (one LSA team)
 *  - create a device communicator (ncclDevCommCreate) with one LSA barrier
 *    per CTA, and hand it to a kernel by value
 *  - in the kernel: read every peer's symmetric window through
 *    ncclGetLsaPointer, write the sum into every peer's window, and put an
 *    acquire barrier before the first peer access and a release barrier after
 *    the last one
 *
 * Runs as one thread per GPU (NTHREADS=N ./allreduce_lsa) or, built with
 * make MPI=1, one process per GPU (mpirun -np N ./allreduce_lsa). The rank
 * bootstrap, error checks, ordered printing and verification live in
 * ../../common, as in the other two lessons.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>
#include <nccl.h>
#include <nccl_device.h>

#include "example.h"

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 30, 7)
/* NCCL's own example of this kernel orders its first barrier as acquire
 * from 2.30.3 (relaxed in 2.28.9 to 2.29.7); 2.30.7 is the release whose
 * device API this lesson's facts were recorded on (README.md). */
#error "nccl.h is older than 2.30.7: allreduce_lsa needs NCCL >= 2.30.7"
#endif

/* The launch: one LSA barrier per CTA, so the CTA count is also the
 * barrier count the device communicator is asked for. */
#define NCCL_DEVICE_CTA_COUNT       16
#define NCCL_DEVICE_THREADS_PER_CTA 512

/* Every rank runs this kernel on its own GPU. Its threads, across all
 * ranks, split the elements; each element is summed from every rank's send
 * window and the sum is stored into every rank's receive window. */
__global__ void simpleAllReduceKernel(ncclWindow_t sendwin, size_t sendoffset,
                                      ncclWindow_t recvwin, size_t recvoffset,
                                      size_t count, struct ncclDevComm devComm)
{
  /* This CTA's barrier (index blockIdx.x) with the same CTA of every rank
   * of the LSA team. Acquire: the peers' data, written before their own
   * kernels started, is visible after it, and no peer still reads the
   * buffers this kernel is about to write. */
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), devComm,
                                         ncclTeamLsa(devComm),
                                         devComm.lsaBarrier, blockIdx.x};
  bar.sync(ncclCoopCta(), cuda::memory_order_acquire);

  const int rank = devComm.lsaRank, nRanks = devComm.lsaSize;
  const size_t globalTid =
      threadIdx.x + (size_t)blockDim.x * (rank + (size_t)blockIdx.x * nRanks);
  const size_t globalNthreads = (size_t)blockDim.x * gridDim.x * nRanks;

  for (size_t offset = globalTid; offset < count; offset += globalNthreads) {
    float v = 0.0f;
    for (int peer = 0; peer < nRanks; peer++) {
      const float *sendPtr =
          (const float *)ncclGetLsaPointer(sendwin, sendoffset, peer);
      v += sendPtr[offset];
    }
    for (int peer = 0; peer < nRanks; peer++) {
      float *recvPtr = (float *)ncclGetLsaPointer(recvwin, recvoffset, peer);
      recvPtr[offset] = v;
    }
  }

  /* Release: this CTA's stores into the peers' windows are visible to them
   * once they pass the barrier, and the kernel ends only when every peer's
   * stores into this rank's window have arrived. */
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}

/* Ends the lesson early, on every rank, where the communicator cannot run
 * it: the reason has been printed; the communicator is torn down. */
static int refuse(ncclComm_t comm)
{
  NCCLCHECK(ncclCommFinalize(comm));
  NCCLCHECK(ncclCommDestroy(comm));
  return EXIT_FAILURE;
}

static int allreduce_lsa(const rank_ctx *ctx)
{
  const int my_rank = ctx->rank;
  const int total_ranks = ctx->nranks;

  /* STEP 1: Initialize the communicator (as for the host API) ------------ */
  print_root(ctx, "Starting Device API AllReduce example with %d ranks\n",
             total_ranks);
  ncclUniqueId nccl_unique_id;
  if (my_rank == 0)
    NCCLCHECK(ncclGetUniqueId(&nccl_unique_id));
  util_broadcast(0, ctx, &nccl_unique_id);

  CUDACHECK(cudaSetDevice(ctx->device));
  ncclComm_t comm;
  NCCLCHECK(ncclCommInitRank(&comm, total_ranks, nccl_unique_id, my_rank));
  all_ranks_print(ctx, "  Rank %d communicator initialized using device %d\n",
                  my_rank, ctx->device);

  /* STEP 2: Can this communicator's kernels use the device API? ----------
   * The properties struct must come from its initializer: NCCL reads the
   * version it was compiled with from it (and refuses a library older than
   * that). One LSA team: every rank reaches every other rank's memory with
   * loads and stores, which this kernel does. */
  ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
  NCCLCHECK(ncclCommQueryProperties(comm, &props));
  if (!all_ranks_check_device_api(ctx, props.deviceApiSupport,
                                  props.nLsaTeams))
    return refuse(comm);
  all_ranks_print(ctx, "  Rank %d: device API supported, %d LSA team\n",
                  my_rank, props.nLsaTeams);

  /* STEP 3: Allocate and register symmetric windows -----------------------
   * As in 01_allreduce: ncclMemAlloc memory, registered collectively; the
   * kernel reaches the peers' buffers only through these windows. */
  const size_t count = ctx->opts->count;
  const size_t size_bytes = count * sizeof(float);
  all_ranks_print(ctx, "  Rank %d allocating %.2f MB per buffer\n", my_rank,
                  size_bytes / MiB);
  float *h_data = (float *)host_calloc(count, sizeof(float));
  float *h_result = (float *)host_calloc(count, sizeof(float));
  void *d_sendbuff;
  void *d_recvbuff;
  NCCLCHECK(ncclMemAlloc(&d_sendbuff, size_bytes));
  NCCLCHECK(ncclMemAlloc(&d_recvbuff, size_bytes));
  ncclWindow_t send_win = NULL;
  ncclWindow_t recv_win = NULL;
  NCCLCHECK(ncclCommWindowRegister(comm, d_sendbuff, size_bytes, &send_win,
                                   NCCL_WIN_COLL_SYMMETRIC));
  NCCLCHECK(ncclCommWindowRegister(comm, d_recvbuff, size_bytes, &recv_win,
                                   NCCL_WIN_COLL_SYMMETRIC));
  if (!all_ranks_report_windows(ctx, send_win, recv_win)) {
    /* A kernel cannot reach a buffer that has no window. */
    NCCLCHECK(ncclCommWindowDeregister(comm, send_win));
    NCCLCHECK(ncclCommWindowDeregister(comm, recv_win));
    NCCLCHECK(ncclMemFree(d_sendbuff));
    NCCLCHECK(ncclMemFree(d_recvbuff));
    free(h_data);
    free(h_result);
    print_error("the device API needs a symmetric window on every rank\n");
    return refuse(comm);
  }

  /* STEP 4: Initialize data: a value per rank and element ----------------
   * Every rank's part changes every sum (rank 0's too: a fill of the rank's
   * number would add 0 there), so a kernel that skips a peer gets a wrong
   * sum (common/src/verify.c, fill_pattern). On the kernel's stream, which
   * orders the copy before the kernel; the peers see it after their first
   * barrier. */
  cudaStream_t stream;
  CUDACHECK(cudaStreamCreate(&stream));
  fill_pattern(h_data, count, my_rank);
  CUDACHECK(cudaMemcpyAsync(d_sendbuff, h_data, size_bytes,
                            cudaMemcpyHostToDevice, stream));
  all_ranks_print(ctx, "  Rank %d data initialized\n", my_rank);

  /* STEP 5: Create the device communicator --------------------------------
   * From the requirements' initializer (NCCL >= 2.29.2 refuses a struct
   * made otherwise), asking for one LSA barrier per CTA of the launch.
   * Collective: every rank creates it. */
  ncclDevComm devComm;
  ncclDevCommRequirements reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.lsaBarrierCount = NCCL_DEVICE_CTA_COUNT;
  NCCLCHECK(ncclDevCommCreate(comm, &reqs, &devComm));
  all_ranks_print(ctx,
                  "  Rank %d created device communicator with %d LSA"
                  " barriers\n",
                  my_rank, NCCL_DEVICE_CTA_COUNT);

  /* STEP 6: Launch the kernel: the AllReduce is this kernel -------------- */
  print_root(ctx, "Starting AllReduce with %zu elements (%zu MB) using Device"
                  " API\n",
             count, size_bytes / (1024 * 1024));
  simpleAllReduceKernel<<<NCCL_DEVICE_CTA_COUNT, NCCL_DEVICE_THREADS_PER_CTA,
                          0, stream>>>(send_win, 0, recv_win, 0, count,
                                       devComm);
  CUDACHECK(cudaGetLastError());
  CUDACHECK(cudaStreamSynchronize(stream));
  print_root(ctx, "AllReduce kernel completed\n");

  /* STEP 7: Verify: every element is the sum of every rank's pattern ----- */
  CUDACHECK(
      cudaMemcpy(h_result, d_recvbuff, size_bytes, cudaMemcpyDeviceToHost));
  const int ok = verify_allreduce_pattern(ctx, h_result, count);

  /* STEP 8: Clean up: the device communicator first, then as 01_allreduce */
  free(h_data);
  free(h_result);
  NCCLCHECK(ncclDevCommDestroy(comm, &devComm));
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
  print_root(ctx, "Example completed - demonstrated an AllReduce kernel on"
                  " symmetric windows through the device API\n");
  return EXIT_SUCCESS;
}

/* The same kernel as the instruments run it (common/include/bootstrap.h,
 * device_kernel): the lesson's checks, its device communicator, one launch
 * per operation. */
static int kernel_usable(const rank_ctx *ctx, ncclComm_t comm)
{
  ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
  NCCLCHECK(ncclCommQueryProperties(comm, &props));
  return all_ranks_check_device_api(ctx, props.deviceApiSupport,
                                    props.nLsaTeams);
}

static void *kernel_setup(const rank_ctx *ctx, ncclComm_t comm)
{
  (void)ctx;
  ncclDevComm *devComm = (ncclDevComm *)host_calloc(1, sizeof *devComm);
  ncclDevCommRequirements reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.lsaBarrierCount = NCCL_DEVICE_CTA_COUNT;
  NCCLCHECK(ncclDevCommCreate(comm, &reqs, devComm));
  return devComm;
}

static void kernel_run(void *state, int variant, ncclWindow_t send_win,
                       size_t send_offset, ncclWindow_t recv_win,
                       size_t recv_offset, size_t count, cudaStream_t stream)
{
  (void)variant; /* one: the lesson's kernel */
  const ncclDevComm *devComm = (const ncclDevComm *)state;
  simpleAllReduceKernel<<<NCCL_DEVICE_CTA_COUNT, NCCL_DEVICE_THREADS_PER_CTA,
                          0, stream>>>(send_win, send_offset, recv_win,
                                       recv_offset, count, *devComm);
  CUDACHECK(cudaGetLastError());
}

static void kernel_teardown(ncclComm_t comm, void *state)
{
  NCCLCHECK(ncclDevCommDestroy(comm, (const ncclDevComm *)state));
  free(state);
}

int main(int argc, char *argv[])
{
  /* The driver (common/) checks the GPUs and the loaded NCCL against this:
   * at least 2.30.7, and not older than the nccl.h this was built with (the
   * device API refuses that). */
  static const device_kernel lsa_kernel = {
      .usable = kernel_usable,
      .setup = kernel_setup,
      .run = kernel_run,
      .teardown = kernel_teardown,
  };
  static const example_desc example = {
      .lesson = allreduce_lsa,
      .min_nccl = NCCL_VERSION(2, 30, 7),
      .needs = "the device API (ncclDevCommCreate, LSA barriers)",
      .collective = COLLECTIVE_ALLREDUCE,
      .headers_bound = NCCL_VERSION_CODE,
      .kernel = &lsa_kernel,
  };
  return run_example(argc, argv, &example);
}
