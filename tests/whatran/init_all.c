/* A program that makes its communicator with ncclCommInitAll, one rank per
 * visible GPU in this one process, for tools/whatran's cases
 * (tests/suites/63-whatran.sh, through tools/simulate.sh --preload). Each
 * rank, in a thread of its own, runs an AllReduce of 4 KiB (buffers not in
 * windows) and checks it; the communicators are destroyed by the main
 * thread. Modes (the first argument):
 *   (none)      as above
 *   one-thread  the main thread runs every rank's AllReduce, in one group
 *               (NCCL's usual use of ncclCommInitAll)
 *   broadcast   each rank runs an ncclBroadcast instead
 * It prints one line per rank, in rank order ("done", or what failed), and
 * exits 0 only when every rank is done. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>

#define N 1024 /* floats: 4 KiB */
#define MAX_RANKS 64

static ncclComm_t comms[MAX_RANKS];
static int nranks;
static const char *mode = "";
static const char *failed[MAX_RANKS]; /* each rank's first failure */

/* Each rank adds its rank + 1: the sum is n(n+1)/2 everywhere. */
static int queue(int r, float *buf, cudaStream_t s)
{
  if (strcmp(mode, "broadcast") == 0)
    return ncclBroadcast(buf, buf, N, ncclFloat, 0, comms[r], s) == ncclSuccess;
  return ncclAllReduce(buf, buf, N, ncclFloat, ncclSum, comms[r], s) ==
         ncclSuccess;
}

static void *rank_main(void *arg)
{
  int r = (int)(intptr_t)arg;
  float host[N], *buf = NULL;
  cudaStream_t s;
  for (int i = 0; i < N; i++)
    host[i] = (float)(r + 1);
  if (cudaSetDevice(r) != cudaSuccess || cudaStreamCreate(&s) != cudaSuccess ||
      cudaMalloc((void **)&buf, sizeof host) != cudaSuccess ||
      cudaMemcpyAsync(buf, host, sizeof host, cudaMemcpyHostToDevice, s) !=
          cudaSuccess) {
    failed[r] = "CUDA setup";
    return NULL;
  }
  if (!queue(r, buf, s))
    failed[r] = "the collective";
  else if (cudaMemcpyAsync(host, buf, sizeof host, cudaMemcpyDeviceToHost,
                           s) != cudaSuccess ||
           cudaStreamSynchronize(s) != cudaSuccess)
    failed[r] = "cudaStreamSynchronize";
  else if (host[N - 1] != (float)(nranks * (nranks + 1) / 2))
    failed[r] = "the result";
  cudaFree(buf);
  cudaStreamDestroy(s);
  return NULL;
}

/* Every rank's AllReduce from this thread, in one group. */
static void one_thread(void)
{
  float *buf[MAX_RANKS];
  cudaStream_t s[MAX_RANKS];
  for (int r = 0; r < nranks; r++) {
    cudaSetDevice(r);
    cudaStreamCreate(&s[r]);
    cudaMalloc((void **)&buf[r], N * sizeof(float));
    cudaMemsetAsync(buf[r], 0, N * sizeof(float), s[r]);
  }
  ncclGroupStart();
  for (int r = 0; r < nranks; r++)
    if (!queue(r, buf[r], s[r]))
      failed[r] = "the collective";
  if (ncclGroupEnd() != ncclSuccess)
    failed[0] = "ncclGroupEnd";
  for (int r = 0; r < nranks; r++) {
    if (cudaStreamSynchronize(s[r]) != cudaSuccess && failed[r] == NULL)
      failed[r] = "cudaStreamSynchronize";
    cudaFree(buf[r]);
    cudaStreamDestroy(s[r]);
  }
}

int main(int argc, char **argv)
{
  mode = argc > 1 ? argv[1] : "";
  if (cudaGetDeviceCount(&nranks) != cudaSuccess || nranks < 1 ||
      nranks > MAX_RANKS) {
    printf("no usable GPU\n");
    return 1;
  }
  if (ncclCommInitAll(comms, nranks, NULL) != ncclSuccess) {
    printf("ncclCommInitAll failed\n");
    return 1;
  }
  if (strcmp(mode, "one-thread") == 0)
    one_thread();
  else {
    pthread_t t[MAX_RANKS];
    for (intptr_t r = 0; r < nranks; r++)
      pthread_create(&t[r], NULL, rank_main, (void *)r);
    for (int r = 0; r < nranks; r++)
      pthread_join(t[r], NULL);
  }
  int bad = 0;
  for (int r = 0; r < nranks; r++) {
    if (ncclCommDestroy(comms[r]) != ncclSuccess && failed[r] == NULL)
      failed[r] = "ncclCommDestroy";
    printf("rank %d: %s%s\n", r, failed[r] ? failed[r] : "done",
           failed[r] ? " failed" : "");
    bad |= failed[r] != NULL;
  }
  return bad;
}
