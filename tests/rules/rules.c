/* Deliberately wrong programs, one per lifecycle rule, run on 2 thread ranks
 * against ncclsim: `rules CASE` must end with that rule's violation (exit 70).
 * They prove the simulation's checks can fail. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "bootstrap.h"
#include "checks.h"
#include "rules.h"

#define BYTES 8192

static ncclComm_t init_comm(const rank_ctx *ctx, int device)
{
  ncclUniqueId id;
  if (ctx->rank == 0)
    NCCLCHECK(ncclGetUniqueId(&id));
  util_broadcast(0, ctx, &id);
  CUDACHECK(cudaSetDevice(device));
  ncclComm_t comm;
  NCCLCHECK(ncclCommInitRank(&comm, ctx->nranks, id, ctx->rank));
  return comm;
}

static void finish(ncclComm_t comm)
{
  NCCLCHECK(ncclCommFinalize(comm));
  NCCLCHECK(ncclCommDestroy(comm));
}

static int window_on_cudamalloc(const rank_ctx *ctx)
{
  ncclComm_t comm = init_comm(ctx, ctx->rank);
  void *buf;
  ncclWindow_t win;
  CUDACHECK(cudaMalloc(&buf, BYTES));
  NCCLCHECK(
      ncclCommWindowRegister(comm, buf, BYTES, &win, NCCL_WIN_COLL_SYMMETRIC));
  return 0;
}

static int window_alignment(const rank_ctx *ctx)
{
  ncclComm_t comm = init_comm(ctx, ctx->rank);
  char *buf;
  ncclWindow_t win;
  NCCLCHECK(ncclMemAlloc((void **)&buf, BYTES));
  NCCLCHECK(ncclCommWindowRegister(comm, buf + 256, 4096, &win,
                                   NCCL_WIN_COLL_SYMMETRIC));
  return 0;
}

static int symmetric_registration(const rank_ctx *ctx)
{
  ncclComm_t comm = init_comm(ctx, ctx->rank);
  void *buf;
  ncclWindow_t win;
  NCCLCHECK(ncclMemAlloc(&buf, BYTES));
  size_t size = ctx->rank == 1 ? BYTES / 2 : BYTES;
  NCCLCHECK(
      ncclCommWindowRegister(comm, buf, size, &win, NCCL_WIN_COLL_SYMMETRIC));
  return 0;
}

static int missing_rank(const rank_ctx *ctx)
{
  ncclComm_t comm = init_comm(ctx, ctx->rank);
  void *buf;
  ncclWindow_t win;
  NCCLCHECK(ncclMemAlloc(&buf, BYTES));
  if (ctx->rank == 1) { /* never registers: rank 0 waits for it */
    pause();
    return 0;
  }
  NCCLCHECK(
      ncclCommWindowRegister(comm, buf, BYTES, &win, NCCL_WIN_COLL_SYMMETRIC));
  return 0;
}

static int recv_too_small(const rank_ctx *ctx)
{
  ncclComm_t comm = init_comm(ctx, ctx->rank);
  void *send, *recv;
  NCCLCHECK(ncclMemAlloc(&send, BYTES));
  NCCLCHECK(ncclMemAlloc(&recv, BYTES)); /* needs BYTES * ranks */
  NCCLCHECK(
      ncclAllGather(send, recv, BYTES / sizeof(float), ncclFloat, comm, NULL));
  return 0;
}

static int free_before_deregister(const rank_ctx *ctx)
{
  ncclComm_t comm = init_comm(ctx, ctx->rank);
  void *buf;
  ncclWindow_t win;
  NCCLCHECK(ncclMemAlloc(&buf, BYTES));
  NCCLCHECK(
      ncclCommWindowRegister(comm, buf, BYTES, &win, NCCL_WIN_COLL_SYMMETRIC));
  NCCLCHECK(ncclMemFree(buf));
  return 0;
}

static int destroy_before_deregister(const rank_ctx *ctx)
{
  ncclComm_t comm = init_comm(ctx, ctx->rank);
  void *buf;
  ncclWindow_t win;
  NCCLCHECK(ncclMemAlloc(&buf, BYTES));
  NCCLCHECK(
      ncclCommWindowRegister(comm, buf, BYTES, &win, NCCL_WIN_COLL_SYMMETRIC));
  finish(comm);
  return 0;
}

static int memfree_on_cudamalloc(const rank_ctx *ctx)
{
  (void)ctx;
  void *buf;
  CUDACHECK(cudaMalloc(&buf, BYTES));
  NCCLCHECK(ncclMemFree(buf));
  return 0;
}

static int one_rank_per_device(const rank_ctx *ctx)
{
  ncclComm_t comm = init_comm(ctx, 0); /* both ranks on device 0 */
  finish(comm);
  return 0;
}

static int leak(const rank_ctx *ctx)
{
  ncclComm_t comm = init_comm(ctx, ctx->rank);
  void *buf;
  NCCLCHECK(ncclMemAlloc(&buf, BYTES)); /* never freed */
  finish(comm);
  return 0;
}

/* The id is made by each rank on its own instead of broadcast from rank 0:
 * here rank 1 passes an id that ncclGetUniqueId never made. */
static int unbroadcast_id(const rank_ctx *ctx)
{
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (ctx->rank == 0)
    NCCLCHECK(ncclGetUniqueId(&id));
  CUDACHECK(cudaSetDevice(ctx->rank));
  ncclComm_t comm;
  NCCLCHECK(ncclCommInitRank(&comm, ctx->nranks, id, ctx->rank));
  return 0;
}

/* A window that runs past the end of the allocation it sits in: no larger
 * than the allocation, but registered from an offset into it. */
static int window_past_allocation(const rank_ctx *ctx)
{
  ncclComm_t comm = init_comm(ctx, ctx->rank);
  char *buf;
  ncclWindow_t win;
  NCCLCHECK(ncclMemAlloc((void **)&buf, BYTES));
  NCCLCHECK(ncclCommWindowRegister(comm, buf + NCCL_WIN_REQUIRED_ALIGNMENT,
                                   BYTES, &win, NCCL_WIN_COLL_SYMMETRIC));
  return 0;
}

/* A window deregistered through a communicator it was not registered on. */
static int deregister_on_other_comm(const rank_ctx *ctx)
{
  ncclComm_t first = init_comm(ctx, ctx->rank);
  ncclComm_t second = init_comm(ctx, ctx->rank);
  void *buf;
  ncclWindow_t win;
  NCCLCHECK(ncclMemAlloc(&buf, BYTES));
  NCCLCHECK(
      ncclCommWindowRegister(first, buf, BYTES, &win, NCCL_WIN_COLL_SYMMETRIC));
  NCCLCHECK(ncclCommWindowDeregister(second, win));
  return 0;
}

/* Two thread ranks on one device (allowed: NCCL 2.30 with the switch on),
 * and a copy on the legacy default stream: this file is built without
 * per-thread default streams, so cudaMemcpy is the legacy one. */
static int legacy_stream_on_shared_gpu(const rank_ctx *ctx)
{
  ncclComm_t comm = init_comm(ctx, 0);
  void *buf;
  char host[BYTES] = {0};
  NCCLCHECK(ncclMemAlloc(&buf, BYTES));
  CUDACHECK(cudaMemcpy(buf, host, BYTES, cudaMemcpyHostToDevice));
  NCCLCHECK(ncclMemFree(buf));
  finish(comm);
  return 0;
}

/* A copy queued on a stream being captured into a CUDA graph: the
 * simulation captures only NCCL collectives, and says so. */
static int copy_in_capture(const rank_ctx *ctx)
{
  ncclComm_t comm = init_comm(ctx, ctx->rank);
  void *buf;
  cudaStream_t stream;
  cudaGraph_t graph;
  NCCLCHECK(ncclMemAlloc(&buf, BYTES));
  CUDACHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CUDACHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  CUDACHECK(cudaMemsetAsync(buf, 0, BYTES, stream));
  CUDACHECK(cudaStreamEndCapture(stream, &graph));
  CUDACHECK(cudaGraphDestroy(graph));
  CUDACHECK(cudaStreamDestroy(stream));
  NCCLCHECK(ncclMemFree(buf));
  finish(comm);
  return 0;
}

/* A buffer set on one stream and read back on another, with no event or
 * wait between: the two are unordered (stream-data-race). */
static int memset_read_on_two_streams(const rank_ctx *ctx)
{
  ncclComm_t comm = init_comm(ctx, ctx->rank);
  float *buf = NULL, host[4] = {0};
  cudaStream_t set, read;
  CUDACHECK(cudaMalloc((void **)&buf, sizeof host));
  CUDACHECK(cudaStreamCreateWithFlags(&set, cudaStreamNonBlocking));
  CUDACHECK(cudaStreamCreateWithFlags(&read, cudaStreamNonBlocking));
  CUDACHECK(cudaMemsetAsync(buf, 0, sizeof host, set));
  CUDACHECK(cudaMemcpyAsync(host, buf, sizeof host, cudaMemcpyDeviceToHost, read));
  CUDACHECK(cudaStreamDestroy(set));
  CUDACHECK(cudaStreamDestroy(read));
  CUDACHECK(cudaFree(buf));
  finish(comm);
  return 0;
}

/* Ranks passing different counts to one AllReduce: rank 1 half of rank
 * 0's (both buffers large enough for either). */
static int counts_differ(const rank_ctx *ctx)
{
  ncclComm_t comm = init_comm(ctx, ctx->rank);
  void *send, *recv;
  cudaStream_t stream;
  const size_t count = BYTES / sizeof(float) / (ctx->rank == 1 ? 2 : 1);
  NCCLCHECK(ncclMemAlloc(&send, BYTES));
  NCCLCHECK(ncclMemAlloc(&recv, BYTES));
  CUDACHECK(cudaStreamCreate(&stream));
  CUDACHECK(cudaMemsetAsync(send, 0, BYTES, stream));
  NCCLCHECK(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, stream));
  CUDACHECK(cudaStreamSynchronize(stream));
  return 0;
}

static const rule_case cases[] = {
    {"window-on-ncclMemAlloc", window_on_cudamalloc},
    {"window-alignment", window_alignment},
    {"symmetric-registration", symmetric_registration},
    {"collective-calls", missing_rank},
    {"buffers-inside-allocations", recv_too_small},
    {"deregister-before-free", free_before_deregister},
    {"deregister-before-destroy", destroy_before_deregister},
    {"free-with-ncclMemFree", memfree_on_cudamalloc},
    {"one-rank-per-device", one_rank_per_device},
    {"no-leaks", leak},
    {"shared-gpu-legacy-stream", legacy_stream_on_shared_gpu},
    {"unique-id", unbroadcast_id},
    {"window-inside-allocation", window_past_allocation},
    {"window-owner", deregister_on_other_comm},
    {"graph-capture", copy_in_capture},
    {"stream-data-race", memset_read_on_two_streams},
};

/* Everything released but one CUDA event. */
static int event_left(const rank_ctx *ctx)
{
  ncclComm_t comm = init_comm(ctx, ctx->rank);
  cudaEvent_t event;
  CUDACHECK(cudaEventCreate(&event)); /* never destroyed */
  finish(comm);
  return 0;
}

/* More wrong programs for a rule that has one above: RULE/HOW. */
static const rule_case variants[] = {
    {"collective-calls/counts-differ", counts_differ},
    {"no-leaks/event-left", event_left},
    {"lsa-data-race/host-writes-own-window", host_writes_own_window},
};

/* The case of that name, in any table; with its settings. */
static const rule_case *find(const char *name)
{
  for (size_t i = 0; i < sizeof variants / sizeof *variants; i++)
    if (strcmp(name, variants[i].name) == 0) {
      if (variants[i].fn == host_writes_own_window)
        setenv("SIM_NCCL_VERSION", "23007", 1); /* the device API's */
      return &variants[i];
    }
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    if (strcmp(name, cases[i].name) == 0) {
      if (cases[i].fn == legacy_stream_on_shared_gpu) {
        setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 1);
        setenv("SIM_NCCL_VERSION", "23007", 1);
      }
      return &cases[i];
    }
  for (size_t i = 0; i < device_ncases; i++)
    if (strcmp(name, device_cases[i].name) == 0) {
      setenv("SIM_NCCL_VERSION", "23007", 1); /* the device API's */
      return &device_cases[i];
    }
  return NULL;
}

int main(int argc, char *argv[])
{
  const rule_case *c = argc == 2 ? find(argv[1]) : NULL;
  if (c != NULL) {
    example_options opts = {.prog = "rules", .count = 1};
    return run_ranks(2, 2, &opts, c->fn, NULL);
  }
  fprintf(stderr, "usage: rules CASE, one of:");
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    fprintf(stderr, " %s", cases[i].name);
  for (size_t i = 0; i < device_ncases; i++)
    fprintf(stderr, " %s", device_cases[i].name);
  fprintf(stderr, "\nmore ways to break a rule:");
  for (size_t i = 0; i < sizeof variants / sizeof *variants; i++)
    fprintf(stderr, " %s", variants[i].name);
  fprintf(stderr, "\n");
  return 2;
}
