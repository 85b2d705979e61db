/*
 * The simulated GPU's time (tests/sim/clock.c), against the simulation
 * alone: two ranks as threads, each on a device of its own whose clock no
 * other work moved. SIM_GPU_US gives rank 1's device copy 20 ms and every
 * collective 1 ms.
 *
 *   work, not the host       an event reads the simulated clock: the host
 *                            asleep 50 ms before it waits counts for nothing
 *   a collective waits       it starts when every rank's GPU is ready: rank
 *   for its peers            1's copy before it delays rank 0's by 20 ms,
 *                            as a GPU that waits for its peer does
 *   not ready before it ran  an event whose record has not run says
 *                            cudaErrorNotReady, as on a GPU
 *
 * So rank 0 (start, AllReduce, stop) reads 20 + 1 = 21 ms, and rank 1
 * (copy, start, AllReduce, stop) 1 ms.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "test_util.h"

#define COUNT 256

typedef struct {
  ncclUniqueId id;
  int rank;
  float ms; /* what cudaEventElapsedTime said; -1 if it failed */
} timed_rank;

static void *time_one_collective(void *arg)
{
  timed_rank *t = arg;
  ncclComm_t comm = NULL;
  float *buf = NULL;
  cudaStream_t stream = NULL;
  cudaEvent_t start = NULL, stop = NULL;
  /* Devices 2 and 3: clocks that start at 0 (clock.c). */
  EXPECT(cudaSetDevice(2 + t->rank) == cudaSuccess);
  EXPECT(ncclCommInitRank(&comm, 2, t->id, t->rank) == ncclSuccess);
  EXPECT(ncclMemAlloc((void **)&buf, 2 * COUNT * sizeof *buf) == ncclSuccess);
  EXPECT(cudaStreamCreate(&stream) == cudaSuccess);
  EXPECT(cudaEventCreate(&start) == cudaSuccess);
  EXPECT(cudaEventCreate(&stop) == cudaSuccess);
  if (t->rank == 1)
    EXPECT(cudaMemcpyAsync(buf + COUNT, buf, COUNT * sizeof *buf,
                           cudaMemcpyDeviceToDevice, stream) == cudaSuccess);
  EXPECT(cudaEventRecord(start, stream) == cudaSuccess);
  EXPECT(ncclAllReduce(buf, buf + COUNT, COUNT, ncclFloat, ncclSum, comm,
                       stream) == ncclSuccess);
  EXPECT(cudaEventRecord(stop, stream) == cudaSuccess);
  float ms = -1;
  EXPECT(cudaEventElapsedTime(&ms, start, stop) == cudaErrorNotReady);
  nanosleep(&(struct timespec){.tv_nsec = 50 * 1000 * 1000}, NULL);
  EXPECT(cudaEventSynchronize(stop) == cudaSuccess);
  t->ms = cudaEventElapsedTime(&ms, start, stop) == cudaSuccess ? ms : -1;
  EXPECT(cudaEventDestroy(start) == cudaSuccess);
  EXPECT(cudaEventDestroy(stop) == cudaSuccess);
  EXPECT(cudaStreamDestroy(stream) == cudaSuccess);
  EXPECT(ncclMemFree(buf) == ncclSuccess);
  EXPECT(ncclCommFinalize(comm) == ncclSuccess);
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
  return NULL;
}

int main(void)
{
  setenv("SIM_GPU_US", "copy:1:20000,collective:*:1000", 1);
  timed_rank ranks[2] = {{.rank = 0, .ms = -1}, {.rank = 1, .ms = -1}};
  EXPECT(ncclGetUniqueId(&ranks[0].id) == ncclSuccess);
  ranks[1].id = ranks[0].id;
  pthread_t threads[2];
  for (int r = 0; r < 2; r++)
    EXPECT(pthread_create(&threads[r], NULL, time_one_collective,
                          &ranks[r]) == 0);
  for (int r = 0; r < 2; r++)
    pthread_join(threads[r], NULL);
  const float want[2] = {21.0f, 1.0f};
  for (int r = 0; r < 2; r++)
    if (ranks[r].ms < want[r] - 1e-3f || ranks[r].ms > want[r] + 1e-3f) {
      fprintf(stderr, "test_sim_clock: rank %d's collective took %.3f ms"
              " between its events, wanted %.3f\n", r, (double)ranks[r].ms,
              (double)want[r]);
      test_failures++;
    }
  if (test_failures == 0)
    printf("test_sim_clock: all passed\n");
  return test_failures == 0 ? 0 : 1;
}
