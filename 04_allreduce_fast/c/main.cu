/*
 * NCCL device API: making your own AllReduce kernel fast (LSA)
 *
 * Learning objectives
 *  - move 16 bytes per load and store, with a scalar head and tail where
 *    the windows are not 16-byte aligned or the count is not a multiple of
 *    4 (kernels.cuh, stage 1)
 *  - size the grid to the GPU: its SM count, the CTAs of this kernel one
 *    SM holds at once, and the ranks sharing the GPU; ask the device
 *    communicator for one LSA barrier per CTA (stage 2)
 *  - one-shot and two-shot, with an acq_rel barrier between the two-shot's
 *    phases, and a choice between the kernels by message size (stage 3)
 *
 * Lesson 03 is the kernel of NCCL's 06_device_api/01; this lesson keeps its
 * lifecycle and its checks and changes the kernel only. Runs as one thread
 * per GPU (NTHREADS=N ./allreduce_fast) or, built with make MPI=1, one
 * process per GPU (mpirun -np N ./allreduce_fast). --bench times every
 * stage beside ncclAllReduce (README.md).
 */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>
#include <nccl.h>
#include <nccl_device.h>

#include "example.h"
#include "kernels.cuh"

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 30, 7)
/* As lesson 03: 2.30.7 is the release whose device API these lessons'
 * facts were recorded on. */
#error "nccl.h is older than 2.30.7: allreduce_fast needs NCCL >= 2.30.7"
#endif

#define THREADS_PER_CTA 512
/* Stage 1's grid: lesson 03's (and nccl-tests' device kernels' default). */
#define SMALL_GRID 16
/* The CTAs one operation needs: one per THREADS_PER_CTA * UNROLL vectors,
 * so that a small message meets at few barriers. */
#define FLOATS_PER_CTA                                                         \
  ((size_t)THREADS_PER_CTA * UNROLL * FLOATS_PER_VECTOR)
/* The lesson's choice: one-shot while the bytes it reads per rank (every
 * rank's whole buffer: ranks x size) are at most this, else the push
 * kernel of stage 2, which reads and writes the least. Measured on one
 * H100 with 2 ranks sharing it (README.md): one-shot was the fastest up to
 * 1 MiB per rank, the push kernel from 4 MiB; two-shot at no size. */
#define ONE_SHOT_MAX_READ ((size_t)2 * 1024 * 1024)

enum stage {
  STAGE_VECTORS,  /* stage 1: allreduce_push on 16 CTAs */
  STAGE_GRID,     /* stage 2: allreduce_push on the grid sized to the GPU */
  STAGE_ONE_SHOT, /* stage 3 */
  STAGE_TWO_SHOT, /* stage 3 */
  STAGE_CHOSEN    /* the lesson's choice by size */
};
#define NSTAGES 5

/* The launch of each stage; grid_max is what STEP 3 of the lifecycle found
 * the GPU holds for this kernel, per rank. */
struct Launcher {
  ncclDevComm devComm;
  int grid_max;
  int nranks;
};

/* CTAs for `count` floats: enough for every thread to move UNROLL vectors,
 * at most grid_max. */
static int grid_for(size_t count, int grid_max)
{
  size_t ctas = (count + FLOATS_PER_CTA - 1) / FLOATS_PER_CTA;
  if (ctas < 1)
    ctas = 1;
  return ctas < (size_t)grid_max ? (int)ctas : grid_max;
}

/* What stage `s` runs, for the output and the bench. */
static const char *const stage_names[NSTAGES] = {"vec", "grid", "1shot",
                                                "2shot", "fast"};
static const char *const stage_texts[NSTAGES] = {
    "stage 1: 16-byte vectors, 16 CTAs",
    "stage 2: the grid sized to the GPU",
    "stage 3: one-shot",
    "stage 3: two-shot",
    "the lesson's choice: one-shot, or the push kernel for larger messages",
};

/* The kernel the lesson ships for `count` floats per rank on `nranks`. */
static enum stage chosen_for(size_t count, int nranks)
{
  const size_t read = count * sizeof(float) * (size_t)nranks;
  return read <= ONE_SHOT_MAX_READ ? STAGE_ONE_SHOT : STAGE_GRID;
}

/* Queues one AllReduce of `count` floats per rank, as stage `s` runs it. */
static void launch(const Launcher *l, enum stage s, Windows w,
                   cudaStream_t stream)
{
  if (s == STAGE_CHOSEN)
    s = chosen_for(w.count, l->nranks);
  const int grid = s != STAGE_VECTORS ? grid_for(w.count, l->grid_max)
                   : SMALL_GRID < l->grid_max ? SMALL_GRID
                                              : l->grid_max;
  if (s == STAGE_ONE_SHOT)
    allreduce_one_shot<<<grid, THREADS_PER_CTA, 0, stream>>>(w, l->devComm);
  else if (s == STAGE_TWO_SHOT)
    allreduce_two_shot<<<grid, THREADS_PER_CTA, 0, stream>>>(w, l->devComm);
  else
    allreduce_push<<<grid, THREADS_PER_CTA, 0, stream>>>(w, l->devComm);
  CUDACHECK(cudaGetLastError());
}

/* Collective: the most CTAs of these kernels each rank may launch so that
 * every rank's grid is resident at once (an LSA barrier waits for the same
 * CTA of every peer: a CTA that cannot start until a waiting one ends would
 * hang the job). The smallest over the ranks, so that all launch alike. */
static int grid_max_of(const rank_ctx *ctx)
{
  int sms = 0, push = 0, one = 0, two = 0;
  CUDACHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount,
                                   ctx->device));
  CUDACHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &push, allreduce_push, THREADS_PER_CTA, 0));
  CUDACHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &one, allreduce_one_shot, THREADS_PER_CTA, 0));
  CUDACHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &two, allreduce_two_shot, THREADS_PER_CTA, 0));
  int per_sm = push < one ? push : one;
  per_sm = per_sm < two ? per_sm : two;
  const int mine = sms * per_sm / ctx->ranks_per_gpu;
  if (mine < 1)
    print_error("device %d cannot hold one CTA of %d threads of these"
                " kernels for each of its %d ranks at once (%d SMs, %d CTAs"
                " per SM)\n",
                ctx->device, THREADS_PER_CTA, ctx->ranks_per_gpu, sms, per_sm);
  return -all_ranks_max(ctx, -mine);
}

/* Ends the lesson early, on every rank, where the communicator cannot run
 * it: the reason has been printed; the communicator is torn down. */
static int refuse(ncclComm_t comm)
{
  NCCLCHECK(ncclCommFinalize(comm));
  NCCLCHECK(ncclCommDestroy(comm));
  return EXIT_FAILURE;
}

static int allreduce_fast(const rank_ctx *ctx)
{
  const int my_rank = ctx->rank;
  const int total_ranks = ctx->nranks;

  /* STEP 1: Initialize the communicator ---------------------------------- */
  print_root(ctx, "Starting fast Device API AllReduce example with %d ranks\n",
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

  /* STEP 2: Can this communicator's kernels use the device API? (as 03) -- */
  ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
  NCCLCHECK(ncclCommQueryProperties(comm, &props));
  if (!all_ranks_check_device_api(ctx, props.deviceApiSupport,
                                  props.nLsaTeams))
    return refuse(comm);
  all_ranks_print(ctx, "  Rank %d: device API supported, %d LSA team\n",
                  my_rank, props.nLsaTeams);

  /* STEP 3: Size the grid to the GPU -------------------------------------
   * Every rank's CTAs must be on the GPU at once; a rank launches at most
   * grid_max, fewer for a small message (grid_for). */
  Launcher launcher;
  launcher.nranks = total_ranks;
  launcher.grid_max = grid_max_of(ctx);
  if (launcher.grid_max < 1)
    return refuse(comm);
  print_root(ctx,
             "  Grid: at most %d CTAs of %d threads per rank (%d rank%s per"
             " GPU), %d for this size\n",
             launcher.grid_max, THREADS_PER_CTA, ctx->ranks_per_gpu,
             ctx->ranks_per_gpu == 1 ? "" : "s",
             grid_for(ctx->opts->count, launcher.grid_max));

  /* STEP 4: Allocate and register symmetric windows ----------------------- */
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
    NCCLCHECK(ncclCommWindowDeregister(comm, send_win));
    NCCLCHECK(ncclCommWindowDeregister(comm, recv_win));
    NCCLCHECK(ncclMemFree(d_sendbuff));
    NCCLCHECK(ncclMemFree(d_recvbuff));
    free(h_data);
    free(h_result);
    print_error("the device API needs a symmetric window on every rank\n");
    return refuse(comm);
  }

  /* STEP 5: Initialize data: a value per rank and element ----------------
   * Every rank's part changes every sum, and neighbouring elements differ:
   * a kernel that drops a rank or moves a vector to the wrong place gets a
   * wrong sum (common/src/verify.c, fill_pattern). */
  cudaStream_t stream;
  CUDACHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  fill_pattern(h_data, count, my_rank);
  CUDACHECK(cudaMemcpyAsync(d_sendbuff, h_data, size_bytes,
                            cudaMemcpyHostToDevice, stream));
  all_ranks_print(ctx, "  Rank %d data initialized\n", my_rank);

  /* STEP 6: Create the device communicator: one LSA barrier per CTA of the
   * largest launch (collective) -------------------------------------------- */
  ncclDevCommRequirements reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.lsaBarrierCount = launcher.grid_max;
  NCCLCHECK(ncclDevCommCreate(comm, &reqs, &launcher.devComm));
  all_ranks_print(ctx,
                  "  Rank %d created device communicator with %d LSA"
                  " barriers\n",
                  my_rank, launcher.grid_max);

  /* STEP 7: Run every stage's kernel, and check each ----------------------
   * Before each, the result is set to NaN (all ones), so that an element a
   * kernel does not write is wrong. */
  print_root(ctx, "Starting AllReduce with %zu elements (%zu MB) in %d"
                  " kernels\n",
             count, size_bytes / (1024 * 1024), NSTAGES - 1);
  const Windows w = {send_win, recv_win, 0, 0, count};
  int ok = 1;
  for (int s = STAGE_VECTORS; s < STAGE_CHOSEN; s++) {
    CUDACHECK(cudaMemsetAsync(d_recvbuff, 0xff, size_bytes, stream));
    launch(&launcher, (enum stage)s, w, stream);
    CUDACHECK(cudaMemcpyAsync(h_result, d_recvbuff, size_bytes,
                              cudaMemcpyDeviceToHost, stream));
    CUDACHECK(cudaStreamSynchronize(stream));
    ok &= check_allreduce_pattern(ctx, stage_texts[s], h_result, count);
  }

  /* STEP 8: The AllReduce as you would ship it, verified ----------------- */
  CUDACHECK(cudaMemsetAsync(d_recvbuff, 0xff, size_bytes, stream));
  launch(&launcher, STAGE_CHOSEN, w, stream);
  CUDACHECK(cudaMemcpyAsync(h_result, d_recvbuff, size_bytes,
                            cudaMemcpyDeviceToHost, stream));
  CUDACHECK(cudaStreamSynchronize(stream));
  print_root(ctx, "AllReduce kernel completed (%s)\n",
             chosen_for(count, total_ranks) == STAGE_ONE_SHOT ? "one-shot"
                                                             : "push");
  ok &= verify_allreduce_pattern(ctx, h_result, count);

  /* STEP 9: Clean up: the device communicator first, then as 03 ---------- */
  free(h_data);
  free(h_result);
  NCCLCHECK(ncclDevCommDestroy(comm, &launcher.devComm));
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
  print_root(ctx, "Example completed - demonstrated a fast AllReduce kernel"
                  " on symmetric windows through the device API\n");
  return EXIT_SUCCESS;
}

/* The same kernels as the instruments run them: each stage a mode of
 * --bench (common/include/bootstrap.h, device_kernel). */
static int kernel_usable(const rank_ctx *ctx, ncclComm_t comm)
{
  ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
  NCCLCHECK(ncclCommQueryProperties(comm, &props));
  return all_ranks_check_device_api(ctx, props.deviceApiSupport,
                                    props.nLsaTeams);
}

static void *kernel_setup(const rank_ctx *ctx, ncclComm_t comm)
{
  Launcher *l = (Launcher *)host_calloc(1, sizeof *l);
  l->nranks = ctx->nranks;
  l->grid_max = grid_max_of(ctx);
  ncclDevCommRequirements reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.lsaBarrierCount = l->grid_max;
  NCCLCHECK(ncclDevCommCreate(comm, &reqs, &l->devComm));
  return l;
}

static void kernel_run(void *state, int variant, ncclWindow_t send_win,
                       size_t send_offset, ncclWindow_t recv_win,
                       size_t recv_offset, size_t count, cudaStream_t stream)
{
  const Windows w = {send_win, recv_win, send_offset, recv_offset, count};
  launch((const Launcher *)state, (enum stage)variant, w, stream);
}

static void kernel_teardown(ncclComm_t comm, void *state)
{
  NCCLCHECK(ncclDevCommDestroy(comm, &((Launcher *)state)->devComm));
  free(state);
}

int main(int argc, char *argv[])
{
  static const device_kernel fast_kernel = {
      .usable = kernel_usable,
      .setup = kernel_setup,
      .run = kernel_run,
      .teardown = kernel_teardown,
      .nvariants = NSTAGES,
      .names = {stage_names[0], stage_names[1], stage_names[2], stage_names[3],
                stage_names[4]},
      .texts = {stage_texts[0], stage_texts[1], stage_texts[2], stage_texts[3],
                stage_texts[4]},
  };
  static const example_desc example = {
      .lesson = allreduce_fast,
      .min_nccl = NCCL_VERSION(2, 30, 7),
      .needs = "the device API (ncclDevCommCreate, LSA barriers)",
      .collective = COLLECTIVE_ALLREDUCE,
      .headers_bound = NCCL_VERSION_CODE,
      .kernel = &fast_kernel,
  };
  return run_example(argc, argv, &example);
}
