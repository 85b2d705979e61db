/* A program that does what real programs do and the lessons do not, for
 * tools/whatran's cases (tests/suites/63-whatran.sh). One rank, one
 * communicator:
 *   an AllReduce out of place (NCCL copies locally) and one in place (NCCL
 *   has nothing to do), an AllGather of fp8 elements (1 byte each), and an
 *   AllReduce captured into a CUDA graph, replayed twice;
 *   its window handle lives in memory the program frees (and scribbles on)
 *   right after the registration, keeping a copy.
 * Modes (the first argument):
 *   (none)  as above
 *   fork    then forks a child that exits at once, and waits for it
 *   early   stops before its first NCCL call, as a program that rejects
 *           its options does
 *   unpolled  only this: a non-blocking communicator of one rank asked its
 *           size before any poll, which NCCL refuses while its init runs
 *           (ncclInvalidArgument, NCCL 2.30.7 src/init.cc
 *           ncclCommEnsureReady); the preload must not change that
 * It prints one line; its output must not change under the preload. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <nccl.h>

#define N 1024 /* floats: 4 KiB */
#define FP8 10 /* ncclFloat8e4m3 (nccl.h from 2.24) */

/* Mode unpolled: the results as NCCL's numbers (nccl.h). */
static int unpolled(void)
{
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  cudaSetDevice(0);
  if (ncclGetUniqueId(&id) != ncclSuccess)
    return 1;
  ncclResult_t init = ncclCommInitRankConfig(&comm, 1, id, 0, &config);
  int n = -1;
  ncclResult_t count = ncclCommCount(comm, &n);
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress &&
         ncclCommGetAsyncError(comm, &state) == ncclSuccess)
    ;
  printf("unpolled: init %d, count before a poll %d, then %d\n", (int)init,
         (int)count, (int)state);
  return ncclCommDestroy(comm) != ncclSuccess;
}

int main(int argc, char **argv)
{
  const char *mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "early") == 0) {
    printf("stopped before NCCL\n");
    return 0;
  }
  if (strcmp(mode, "unpolled") == 0)
    return unpolled();
  int bad = 0;
  ncclUniqueId id;
  ncclComm_t comm;
  cudaSetDevice(0);
  bad |= ncclGetUniqueId(&id) != ncclSuccess;
  bad |= ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess;
  cudaStream_t s;
  cudaStreamCreate(&s);
  float *x, *y;
  ncclMemAlloc((void **)&x, N * sizeof(float));
  ncclMemAlloc((void **)&y, N * sizeof(float));
  cudaMemsetAsync(x, 0, N * sizeof(float), s);
  ncclWindow_t *held = malloc(sizeof *held);
  *held = NULL;
  bad |= ncclCommWindowRegister(comm, x, N * sizeof(float), held,
                                NCCL_WIN_COLL_SYMMETRIC) != ncclSuccess;
  ncclWindow_t wx = *held;
  memset(held, 0x5a, sizeof *held);
  free(held);

  bad |= ncclAllReduce(x, y, N, ncclFloat, ncclSum, comm, s) != ncclSuccess;
  bad |= ncclAllReduce(y, y, N, ncclFloat, ncclSum, comm, s) != ncclSuccess;
  bad |= ncclAllGather(x, y, 4 * N, (ncclDataType_t)FP8, comm, s) != ncclSuccess;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  bad |= ncclAllReduce(x, y, N, ncclFloat, ncclSum, comm, s) != ncclSuccess;
  cudaStreamEndCapture(s, &graph);
  cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphLaunch(exec, s);
  cudaGraphLaunch(exec, s);
  cudaStreamSynchronize(s);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);

  if (strcmp(mode, "fork") == 0) {
    fflush(stdout);
    pid_t child = fork();
    if (child == 0)
      exit(0); /* runs the exit handlers it inherited */
    int status = 0;
    bad |= child < 0 || waitpid(child, &status, 0) != child || status != 0;
  }
  if (wx != NULL)
    ncclCommWindowDeregister(comm, wx);
  ncclMemFree(x);
  ncclMemFree(y);
  cudaStreamDestroy(s);
  ncclCommFinalize(comm);
  ncclCommDestroy(comm);
  printf("%s\n", bad ? "an NCCL call failed" : "done");
  return bad;
}
