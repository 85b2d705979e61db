/* A program that uses NCCL as PyTorch's ProcessGroupNCCL does, for
 * tools/whatran's cases (tests/suites/63-whatran.sh) and its runs on a GPU:
 * ranks as threads (NTHREADS, default 2; GPU = rank mod the GPUs), each
 *   - makes its communicator non-blocking (ncclCommInitRankConfig with
 *     config.blocking = 0) and polls ncclCommGetAsyncError until it is
 *     ready, as PyTorch does, and again after every call that hands NCCL
 *     work, before the next call on that communicator,
 *   - splits it by rank parity (ncclCommSplit, non-blocking too), and
 *     waits for the new communicator as NCCL makes it (split_ready),
 *   - runs an AllReduce of 1 MiB in windows on the parent, captures the
 *     same AllReduce into a CUDA graph and replays it 3 times, and runs an
 *     AllGather of 1 MiB a rank on the split communicator, buffers not in
 *     windows.
 * It prints one line per rank, in rank order ("done", or the first step
 * that failed); its output must not change
 * under the preload. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>
#include <nccl.h>

#define COUNT (256 * 1024) /* floats: 1 MiB */

static ncclUniqueId id;
static int nranks = 2, ngpus = 1;

/* A call on a non-blocking communicator: ncclInProgress says NCCL goes on
 * with it in a thread of its own (NCCL 2.30.7 src/enqueue.cc,
 * ncclEnqueueCheck, returns the communicator's asynchronous state). */
static int started(ncclResult_t res)
{
  return res == ncclSuccess || res == ncclInProgress;
}

/* Polls a non-blocking communicator until NCCL says it is ready. */
static int ready(ncclComm_t comm)
{
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress)
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess)
      return 0;
  return state == ncclSuccess;
}

/* ncclCommSplit returns with *child NULL, and NCCL's own thread writes
 * the new communicator there before a poll of the parent says ncclSuccess
 * (NCCL 2.27.7 to 2.30.7, src/init.cc ncclCommInitChildComm): the parent
 * is polled first, then the child. */
static int split_ready(ncclComm_t parent, ncclComm_t *child)
{
  return ready(parent) && *child != NULL && ready(*child);
}

/* Keeps the first step that failed. */
#define STEP(ok, what)                                                         \
  do {                                                                         \
    if (!(ok) && failed == NULL)                                               \
      failed = (what);                                                         \
  } while (0)

static void *rank_main(void *arg)
{
  int rank = (int)(intptr_t)arg;
  const char *failed = NULL; /* the first step that failed */
  cudaSetDevice(rank % ngpus);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t world = NULL, half = NULL;
  ncclResult_t res = ncclCommInitRankConfig(&world, nranks, id, rank, &config);
  STEP(started(res) && ready(world), "ncclCommInitRankConfig");
  res = ncclCommSplit(world, rank % 2, rank, &half, &config);
  STEP(started(res) && split_ready(world, &half), "ncclCommSplit");
  int half_size = 0;
  STEP(ncclCommCount(half, &half_size) == ncclSuccess && half_size > 0,
       "ncclCommCount");

  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  float *x, *y, *g;
  ncclMemAlloc((void **)&x, COUNT * sizeof(float));
  ncclMemAlloc((void **)&y, COUNT * sizeof(float));
  cudaMalloc((void **)&g, (size_t)half_size * COUNT * sizeof(float));
  cudaMemsetAsync(x, 0, COUNT * sizeof(float), s);
  ncclWindow_t wx = NULL, wy = NULL;
  res = ncclCommWindowRegister(world, x, COUNT * sizeof(float), &wx,
                               NCCL_WIN_COLL_SYMMETRIC);
  STEP(started(res) && ready(world), "ncclCommWindowRegister of x");
  res = ncclCommWindowRegister(world, y, COUNT * sizeof(float), &wy,
                               NCCL_WIN_COLL_SYMMETRIC);
  STEP(started(res) && ready(world), "ncclCommWindowRegister of y");

  STEP(started(ncclAllReduce(x, y, COUNT, ncclFloat, ncclSum, world, s)) && ready(world),
       "ncclAllReduce");
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  STEP(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) ==
           cudaSuccess,
       "cudaStreamBeginCapture");
  STEP(started(ncclAllReduce(x, y, COUNT, ncclFloat, ncclSum, world, s)) && ready(world),
       "ncclAllReduce being captured");
  STEP(cudaStreamEndCapture(s, &graph) == cudaSuccess &&
           cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess,
       "cudaStreamEndCapture");
  for (int i = 0; i < 3; i++)
    STEP(cudaGraphLaunch(exec, s) == cudaSuccess, "cudaGraphLaunch");
  STEP(started(ncclAllGather(x, g, COUNT, ncclFloat, half, s)) && ready(half),
       "ncclAllGather");
  STEP(cudaStreamSynchronize(s) == cudaSuccess, "cudaStreamSynchronize");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);

  if (wx != NULL)
    ncclCommWindowDeregister(world, wx);
  if (wy != NULL)
    ncclCommWindowDeregister(world, wy);
  STEP(ready(world), "ncclCommWindowDeregister");
  ncclMemFree(x);
  ncclMemFree(y);
  cudaFree(g);
  cudaStreamDestroy(s);
  ncclCommFinalize(half);
  ncclCommFinalize(world);
  STEP(ready(half) && ready(world), "ncclCommFinalize");
  ncclCommDestroy(half);
  ncclCommDestroy(world);
  return (void *)failed;
}

int main(void)
{
  const char *n = getenv("NTHREADS");
  if (n != NULL && atoi(n) > 0)
    nranks = atoi(n);
  if (cudaGetDeviceCount(&ngpus) != cudaSuccess || ngpus < 1)
    ngpus = 1;
  ncclGetUniqueId(&id);
  pthread_t *t = calloc((size_t)nranks, sizeof *t);
  if (t == NULL)
    return 1;
  for (intptr_t r = 0; r < nranks; r++)
    pthread_create(&t[r], NULL, rank_main, (void *)r);
  int bad = 0;
  for (int r = 0; r < nranks; r++) {
    void *res;
    pthread_join(t[r], &res);
    if (res != NULL)
      printf("rank %d: %s failed\n", r, (const char *)res);
    else
      printf("rank %d: done\n", r);
    bad |= res != NULL;
  }
  free(t);
  return bad;
}
