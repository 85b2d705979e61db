/*
 * 04_allreduce_fast's kernels (kernels.cuh) at window offsets and counts
 * the lesson itself does not use: every byte offset that keeps floats
 * aligned, the same and different for send and receive (so that a head
 * of 0 to 3 scalars, or no vector at all, is taken), and counts with every
 * remainder modulo 4. Each kernel at each case: the receive window set to
 * NaN, one launch, then every element of the window checked on every rank:
 * inside the range, the sum (common/src/verify.c's pattern); outside it,
 * still NaN (a store past the range or before it is named).
 *
 * Built as the simulated lesson is (tests/suites/43-fast.sh); runs with
 * NTHREADS=N or under mpirun. Exit 0 when every case is right, else 1,
 * with a line per wrong case.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>
#include <nccl.h>
#include <nccl_device.h>

#include "example.h"
#include "kernels.cuh"

/* Few fibers on the simulation (the kernels take any blockDim), and few
 * CTAs, so that each thread walks the grid stride; room in the windows
 * for every offset and count. */
#define THREADS 64
#define GRID    3
#define SPAN    8192 /* floats per window */

static const size_t offsets[][2] = {{0, 0}, {4, 4},  {8, 8},  {12, 12},
                                    {4, 8}, {0, 12}, {12, 0}, {8, 4}};
static const size_t counts[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 4099, 6000};
static const char *const kernels[] = {"push", "one-shot", "two-shot"};

static void launch(int k, Windows w, const ncclDevComm &dc, cudaStream_t s)
{
  if (k == 0)
    allreduce_push<<<GRID, THREADS, 0, s>>>(w, dc);
  else if (k == 1)
    allreduce_one_shot<<<GRID, THREADS, 0, s>>>(w, dc);
  else
    allreduce_two_shot<<<GRID, THREADS, 0, s>>>(w, dc);
  CUDACHECK(cudaGetLastError());
}

/* Wrong elements of one result: inside [first, first + count), the sum of
 * the pattern's elements send_first + j; outside, anything but NaN. */
static size_t wrong_in(const float *r, size_t first, size_t count,
                       size_t send_first, int nranks, size_t *where)
{
  size_t bad = 0;
  for (size_t i = 0; i < SPAN; i++) {
    int inside = i >= first && i < first + count;
    int ok;
    if (inside) {
      float want = 0.0f;
      for (int q = 0; q < nranks; q++)
        want += pattern_value(q, send_first + (i - first));
      ok = fabsf(r[i] - want) <= VERIFY_TOLERANCE;
    } else {
      ok = isnan(r[i]);
    }
    if (!ok && bad++ == 0)
      *where = i;
  }
  return bad;
}

static int offsets_lesson(const rank_ctx *ctx)
{
  ncclUniqueId id;
  if (ctx->rank == 0)
    NCCLCHECK(ncclGetUniqueId(&id));
  util_broadcast(0, ctx, &id);
  CUDACHECK(cudaSetDevice(ctx->device));
  ncclComm_t comm;
  NCCLCHECK(ncclCommInitRank(&comm, ctx->nranks, id, ctx->rank));
  const size_t bytes = SPAN * sizeof(float);
  void *send, *recv;
  NCCLCHECK(ncclMemAlloc(&send, bytes));
  NCCLCHECK(ncclMemAlloc(&recv, bytes));
  ncclWindow_t send_win = NULL, recv_win = NULL;
  NCCLCHECK(ncclCommWindowRegister(comm, send, bytes, &send_win,
                                   NCCL_WIN_COLL_SYMMETRIC));
  NCCLCHECK(ncclCommWindowRegister(comm, recv, bytes, &recv_win,
                                   NCCL_WIN_COLL_SYMMETRIC));
  cudaStream_t stream;
  CUDACHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float *host = (float *)host_calloc(SPAN, sizeof(float));
  fill_pattern(host, SPAN, ctx->rank);
  CUDACHECK(cudaMemcpyAsync(send, host, bytes, cudaMemcpyHostToDevice, stream));
  ncclDevComm dc;
  ncclDevCommRequirements reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.lsaBarrierCount = GRID;
  NCCLCHECK(ncclDevCommCreate(comm, &reqs, &dc));

  int ok = 1, cases = 0;
  for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++)
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
      for (int k = 0; k < 3; k++) {
        const Windows w = {send_win, recv_win, offsets[o][0], offsets[o][1],
                           counts[c]};
        CUDACHECK(cudaMemsetAsync(recv, 0xff, bytes, stream));
        launch(k, w, dc, stream);
        CUDACHECK(cudaMemcpyAsync(host, recv, bytes, cudaMemcpyDeviceToHost,
                                  stream));
        CUDACHECK(cudaStreamSynchronize(stream));
        size_t where = 0;
        size_t bad = wrong_in(host, offsets[o][1] / 4, counts[c],
                              offsets[o][0] / 4, ctx->nranks, &where);
        char line[ALL_RANKS_GATHER_MAX] = "";
        if (bad > 0)
          snprintf(line, sizeof line,
                   "  Rank %d: %s, send offset %zu, recv offset %zu, count"
                   " %zu: %zu floats of the window wrong, first at %zu: %g\n",
                   ctx->rank, kernels[k], offsets[o][0], offsets[o][1],
                   counts[c], bad, where, host[where]);
        all_ranks_print_line(ctx, line);
        ok &= all_ranks_ok(ctx, bad == 0);
        cases++;
      }
  print_root(ctx, "%d cases, %s\n", cases, ok ? "all right" : "some wrong");

  free(host);
  NCCLCHECK(ncclDevCommDestroy(comm, &dc));
  NCCLCHECK(ncclCommWindowDeregister(comm, send_win));
  NCCLCHECK(ncclCommWindowDeregister(comm, recv_win));
  NCCLCHECK(ncclMemFree(send));
  NCCLCHECK(ncclMemFree(recv));
  NCCLCHECK(ncclCommFinalize(comm));
  NCCLCHECK(ncclCommDestroy(comm));
  CUDACHECK(cudaStreamDestroy(stream));
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}

int main(int argc, char *argv[])
{
  static const example_desc example = {
      .lesson = offsets_lesson,
      .min_nccl = NCCL_VERSION(2, 30, 7),
      .needs = "the device API (ncclDevCommCreate, LSA barriers)",
      .collective = COLLECTIVE_ALLREDUCE,
      .headers_bound = NCCL_VERSION_CODE,
      .kernel = NULL,
  };
  return run_example(argc, argv, &example);
}
