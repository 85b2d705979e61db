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
 *   bf16    only this: an AllGather of 1024 bfloat16 elements (2 bytes
 *           each: 2 KiB) out of place
 *   other-thread-group  only this: a window registered inside a group
 *           whose end waits until another thread has opened and ended a
 *           group of its own (NCCL writes the handle at the end of the
 *           group of the thread that registered, not of another), then an
 *           AllReduce in place
 *   group-never-ended  only this: an AllReduce in place, then a window
 *           registered inside a group the program never ends
 * It prints one line; its output must not change under the preload. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <nccl.h>

#define N 1024 /* floats: 4 KiB */
#define FP8 10 /* ncclFloat8e4m3 (nccl.h from 2.24) */
#define BF16 9 /* ncclBfloat16 (nccl.h 2.30.7) */

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

/* Another thread's group, opened and ended while main's is open. */
static void *other_group(void *arg)
{
  (void)arg;
  int bad = ncclGroupStart() != ncclSuccess;
  bad |= ncclGroupEnd() != ncclSuccess;
  return (void *)(size_t)bad;
}

/* Modes bf16, other-thread-group and group-never-ended. */
static int one_more(const char *mode)
{
  ncclUniqueId id;
  ncclComm_t comm;
  cudaStream_t s;
  char *x, *y;
  int bad = cudaSetDevice(0) != cudaSuccess;
  bad |= ncclGetUniqueId(&id) != ncclSuccess;
  bad |= ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess;
  bad |= cudaStreamCreate(&s) != cudaSuccess;
  bad |= ncclMemAlloc((void **)&x, N * sizeof(float)) != ncclSuccess;
  bad |= ncclMemAlloc((void **)&y, N * sizeof(float)) != ncclSuccess;
  bad |= cudaMemsetAsync(x, 0, N * sizeof(float), s) != cudaSuccess;
  ncclWindow_t w = NULL;
  if (strcmp(mode, "bf16") == 0) {
    bad |= ncclAllGather(x, y, N, (ncclDataType_t)BF16, comm, s) != ncclSuccess;
  } else if (strcmp(mode, "other-thread-group") == 0) {
    pthread_t other;
    void *other_bad = NULL;
    bad |= ncclGroupStart() != ncclSuccess;
    bad |= ncclCommWindowRegister(comm, x, N * sizeof(float), &w,
                                  NCCL_WIN_COLL_SYMMETRIC) != ncclSuccess;
    bad |= pthread_create(&other, NULL, other_group, NULL) != 0 ||
           pthread_join(other, &other_bad) != 0 || other_bad != NULL;
    bad |= ncclGroupEnd() != ncclSuccess;
    bad |= ncclAllReduce(x, x, N, ncclFloat, ncclSum, comm, s) != ncclSuccess;
  } else {
    bad |= ncclAllReduce(x, x, N, ncclFloat, ncclSum, comm, s) != ncclSuccess;
    bad |= cudaStreamSynchronize(s) != cudaSuccess;
    bad |= ncclGroupStart() != ncclSuccess;
    bad |= ncclCommWindowRegister(comm, x, N * sizeof(float), &w,
                                  NCCL_WIN_COLL_SYMMETRIC) != ncclSuccess;
    printf("%s\n", bad ? "an NCCL call failed" : "done, a group left open");
    return bad; /* as a program that forgot its ncclGroupEnd */
  }
  bad |= cudaStreamSynchronize(s) != cudaSuccess;
  if (w != NULL)
    ncclCommWindowDeregister(comm, w);
  ncclMemFree(x);
  ncclMemFree(y);
  cudaStreamDestroy(s);
  ncclCommFinalize(comm);
  ncclCommDestroy(comm);
  printf("%s\n", bad ? "an NCCL call failed" : "done");
  return bad;
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
  if (strcmp(mode, "bf16") == 0 || strcmp(mode, "other-thread-group") == 0 ||
      strcmp(mode, "group-never-ended") == 0)
    return one_more(mode);
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
