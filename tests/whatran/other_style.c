/* A program in another style than the lessons, for tools/whatran's cases
 * (tests/suites/63-whatran.sh): two ranks as threads, two communicators on
 * each, no layer of ours and no error checks beyond NCCL's return codes.
 *   communicator 1: an AllReduce with both buffers in windows, then the
 *                   same AllReduce captured into a CUDA graph, replayed
 *                   twice
 *   communicator 2: made inside a group; an AllGather inside a group with
 *                   only its output in a window, and one with only its
 *                   input in one
 * With the argument "no-windows" it registers nothing; with "half-window"
 * the second AllGather's output also has a window, over its first half
 * only (the size of one rank's input); with "twins" each communicator
 * makes the same AllReduce without windows, and nothing else (What ran
 * must still say each one); with "one-byte-past" the first AllGather's
 * input also has a window on communicator 2, one byte shorter than the
 * input (it does not hold it); with "mostly-one-rank" each rank also makes
 * a communicator of its own (one rank) and captures two AllReduces on it
 * into a second graph, replayed twice: most captured calls are then of
 * one rank, not all. It prints one line per rank, in
 * rank order; its output must not change under the preload. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>

#define N 1024 /* floats: 4 KiB */

static ncclUniqueId ids[2];
static int windows = 1, half_window = 0, twins = 0, byte_short = 0, solo = 0;

/* "twins": one AllReduce of N floats, without windows, on each. */
static int twin_allreduces(ncclComm_t one, ncclComm_t two)
{
  cudaStream_t s;
  float *x;
  int bad = cudaStreamCreate(&s) != cudaSuccess;
  bad |= ncclMemAlloc((void **)&x, N * sizeof(float)) != ncclSuccess;
  bad |= cudaMemsetAsync(x, 0, N * sizeof(float), s) != cudaSuccess;
  bad |= ncclAllReduce(x, x, N, ncclFloat, ncclSum, one, s) != ncclSuccess;
  bad |= ncclAllReduce(x, x, N, ncclFloat, ncclSum, two, s) != ncclSuccess;
  bad |= cudaStreamSynchronize(s) != cudaSuccess;
  ncclMemFree(x);
  cudaStreamDestroy(s);
  return bad;
}

/* "mostly-one-rank": a communicator of this rank alone, two AllReduces on
 * it (local copies) captured into a graph, replayed twice. */
static int solo_replays(float *x, float *z, cudaStream_t s)
{
  ncclUniqueId id;
  ncclComm_t comm;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  int bad = ncclGetUniqueId(&id) != ncclSuccess;
  bad |= ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess;
  bad |= cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess;
  bad |= ncclAllReduce(x, z, N, ncclFloat, ncclSum, comm, s) != ncclSuccess;
  bad |= ncclAllReduce(z, x, N, ncclFloat, ncclSum, comm, s) != ncclSuccess;
  bad |= cudaStreamEndCapture(s, &graph) != cudaSuccess;
  bad |= cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess;
  bad |= cudaGraphLaunch(exec, s) != cudaSuccess;
  bad |= cudaGraphLaunch(exec, s) != cudaSuccess;
  bad |= cudaStreamSynchronize(s) != cudaSuccess;
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  ncclCommFinalize(comm);
  ncclCommDestroy(comm);
  return bad;
}

static void *rank_main(void *arg)
{
  int rank = (int)(intptr_t)arg, bad = 0;
  cudaSetDevice(rank);
  ncclComm_t one, two;
  bad |= ncclCommInitRank(&one, 2, ids[0], rank) != ncclSuccess;
  ncclGroupStart(); /* its rank is known only after the group */
  bad |= ncclCommInitRank(&two, 2, ids[1], rank) != ncclSuccess;
  ncclGroupEnd();
  if (twins) {
    bad |= twin_allreduces(one, two);
    ncclCommFinalize(one);
    ncclCommFinalize(two);
    ncclCommDestroy(one);
    ncclCommDestroy(two);
    return (void *)(intptr_t)bad;
  }
  cudaStream_t s;
  cudaStreamCreate(&s);
  float *x, *y, *z, *v;
  ncclMemAlloc((void **)&x, N * sizeof(float));
  ncclMemAlloc((void **)&y, 2 * N * sizeof(float));
  ncclMemAlloc((void **)&z, N * sizeof(float));
  ncclMemAlloc((void **)&v, 2 * N * sizeof(float));
  cudaMemsetAsync(x, 0, N * sizeof(float), s);
  cudaMemsetAsync(y, 0, 2 * N * sizeof(float), s);
  ncclWindow_t wx = NULL, wz = NULL, wy = NULL, wv = NULL;
  if (windows) {
    ncclCommWindowRegister(one, x, N * sizeof(float), &wx, NCCL_WIN_COLL_SYMMETRIC);
    ncclCommWindowRegister(one, z, N * sizeof(float), &wz, NCCL_WIN_COLL_SYMMETRIC);
    ncclCommWindowRegister(two, y, 2 * N * sizeof(float), &wy, NCCL_WIN_COLL_SYMMETRIC);
  }
  if (half_window)
    ncclCommWindowRegister(two, v, N * sizeof(float), &wv, NCCL_WIN_COLL_SYMMETRIC);
  ncclWindow_t wshort = NULL;
  if (byte_short)
    ncclCommWindowRegister(two, x, N * sizeof(float) - 1, &wshort, NCCL_WIN_COLL_SYMMETRIC);
  bad |= ncclAllReduce(x, z, N, ncclFloat, ncclSum, one, s) != ncclSuccess;
  ncclGroupStart(); /* as nccl-tests does with several GPUs a process */
  bad |= ncclAllGather(x, y, N, ncclFloat, two, s) != ncclSuccess;
  ncclGroupEnd();
  bad |= ncclAllGather(y, v, N, ncclFloat, two, s) != ncclSuccess;

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  bad |= ncclAllReduce(x, z, N, ncclFloat, ncclSum, one, s) != ncclSuccess;
  cudaStreamEndCapture(s, &graph);
  cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphLaunch(exec, s);
  cudaGraphLaunch(exec, s);
  cudaStreamSynchronize(s);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  if (solo)
    bad |= solo_replays(x, z, s);

  if (windows) {
    ncclCommWindowDeregister(one, wx);
    ncclCommWindowDeregister(one, wz);
    ncclCommWindowDeregister(two, wy);
  }
  if (half_window)
    ncclCommWindowDeregister(two, wv);
  if (byte_short)
    ncclCommWindowDeregister(two, wshort);
  ncclMemFree(x);
  ncclMemFree(y);
  ncclMemFree(z);
  ncclMemFree(v);
  cudaStreamDestroy(s);
  ncclCommFinalize(one);
  ncclCommFinalize(two);
  ncclCommDestroy(one);
  ncclCommDestroy(two);
  return (void *)(intptr_t)bad;
}

int main(int argc, char **argv)
{
  windows = !(argc > 1 && strcmp(argv[1], "no-windows") == 0);
  half_window = argc > 1 && strcmp(argv[1], "half-window") == 0;
  twins = argc > 1 && strcmp(argv[1], "twins") == 0;
  byte_short = argc > 1 && strcmp(argv[1], "one-byte-past") == 0;
  solo = argc > 1 && strcmp(argv[1], "mostly-one-rank") == 0;
  ncclGetUniqueId(&ids[0]);
  ncclGetUniqueId(&ids[1]);
  pthread_t t[2];
  for (intptr_t r = 0; r < 2; r++)
    pthread_create(&t[r], NULL, rank_main, (void *)r);
  int bad = 0;
  for (int r = 0; r < 2; r++) {
    void *res;
    pthread_join(t[r], &res);
    printf("rank %d: %s\n", r, res != NULL ? "an NCCL call failed" : "done");
    bad |= res != NULL;
  }
  return bad;
}
