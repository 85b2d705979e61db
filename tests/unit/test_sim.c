/*
 * The simulation is as unkind as real CUDA and NCCL: each behaviour a
 * program must survive, per simulated NCCL version, checked against the
 * simulation itself (linked in place of libcudart and libnccl). One rank,
 * one thread; each check sets the variables it needs.
 *
 *   fresh device memory      reads as NaN, never as a value a check expects
 *   late copies              a pageable host-to-device copy lands only when
 *                            its own stream is synchronised
 *   late collectives         a collective (and an event) runs only when a
 *                            host call waits for its stream: a result read
 *                            without that wait is the old one; the legacy
 *                            default stream waits for blocking streams, not
 *                            for non-blocking ones
 *   unwritten handles        2.28.3 leaves *win as it was where it has no
 *                            window; 2.30.7 writes NULL
 *   local registrations      before 2.28.7, one rank alone on its node gets
 *                            the handle of a local registration: the same
 *                            one for the same buffer, until deregistered
 *   deferred registration    inside ncclGroupStart/End the handle is
 *                            written at the group's end
 *   graph capture            a collective queued on a stream being captured
 *                            runs only when the graph is launched, once per
 *                            launch; synchronising that stream fails
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "test_util.h"

#define COUNT 256
/* What the program put in the handle before the call: a value NCCL never
 * hands out, so that "not written" differs from NULL. */
#define SENTINEL ((ncclWindow_t)(uintptr_t)0x5e47)

static ncclComm_t one_rank_comm(void)
{
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  EXPECT(ncclGetUniqueId(&id) == ncclSuccess);
  EXPECT(ncclCommInitRank(&comm, 1, id, 0) == ncclSuccess);
  return comm;
}

static void done(ncclComm_t comm)
{
  EXPECT(ncclCommFinalize(comm) == ncclSuccess);
  EXPECT(ncclCommDestroy(comm) == ncclSuccess);
}

static void fresh_memory_is_nan(void)
{
  float *d = NULL, host[COUNT];
  EXPECT(ncclMemAlloc((void **)&d, sizeof host) == ncclSuccess);
  EXPECT(cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost) ==
         cudaSuccess);
  int nan = 0;
  for (int i = 0; i < COUNT; i++)
    nan += isnan(host[i]) != 0;
  EXPECT(nan == COUNT);
  EXPECT(ncclMemFree(d) == ncclSuccess);
}

/* cudaMalloc's memory, small and large (a MiB or more is mapped, not
 * written): all-ones bytes (NaN) until written; a zero cudaMemsetAsync of a
 * range that starts and ends inside pages zeroes exactly that range, and
 * the memory is fresh garbage again in the next allocation. */
static void cuda_malloc_is_garbage_until_set(void)
{
  const size_t sizes[] = {4096, (size_t)3 << 20};
  for (int k = 0; k < 2; k++) {
    for (int again = 0; again < 2; again++) {
      const size_t n = sizes[k];
      unsigned char *d = NULL, *host = malloc(n);
      EXPECT(host != NULL && cudaMalloc((void **)&d, n) == cudaSuccess);
      EXPECT(cudaMemcpy(host, d, n, cudaMemcpyDeviceToHost) == cudaSuccess);
      size_t ones = 0;
      for (size_t i = 0; i < n; i++)
        ones += host[i] == 0xFF;
      EXPECT(ones == n);
      const size_t from = 100, to = n - 7;
      EXPECT(cudaMemsetAsync(d + from, 0, to - from, cudaStreamPerThread) == cudaSuccess);
      EXPECT(cudaStreamSynchronize(cudaStreamPerThread) == cudaSuccess);
      EXPECT(cudaMemcpy(host, d, n, cudaMemcpyDeviceToHost) == cudaSuccess);
      size_t right = 0;
      for (size_t i = 0; i < n; i++)
        right += host[i] == (i >= from && i < to ? 0 : 0xFF);
      EXPECT(right == n);
      EXPECT(cudaFree(d) == cudaSuccess);
      free(host);
    }
  }
}

/* The AllReduce of one rank copies send to recv: what it read from send. */
static float collective_reads(ncclComm_t comm, float *send, float *recv,
                              cudaStream_t stream)
{
  float host = 0;
  EXPECT(ncclAllReduce(send, recv, 1, ncclFloat, ncclSum, comm, stream) ==
         ncclSuccess);
  EXPECT(cudaStreamSynchronize(stream) == cudaSuccess);
  EXPECT(cudaMemcpy(&host, recv, sizeof host, cudaMemcpyDeviceToHost) ==
         cudaSuccess);
  return host;
}

static void copies_land_on_their_stream(void)
{
  ncclComm_t comm = one_rank_comm();
  float *send = NULL, *recv = NULL, value = 7.0f;
  cudaStream_t stream;
  EXPECT(ncclMemAlloc((void **)&send, sizeof value) == ncclSuccess);
  EXPECT(ncclMemAlloc((void **)&recv, sizeof value) == ncclSuccess);
  EXPECT(cudaStreamCreate(&stream) == cudaSuccess);

  /* cudaMemcpy (this thread's default stream), then another stream: the
   * collective may read send only once the host waited for the copy's
   * stream (reading it before is the rule stream-data-race, a case of
   * tests/rules). */
  EXPECT(cudaMemcpy(send, &value, sizeof value, cudaMemcpyHostToDevice) ==
         cudaSuccess);
  value = 8.0f; /* staged at the call: a later change is not copied */
  EXPECT(cudaStreamSynchronize(cudaStreamPerThread) == cudaSuccess);
  EXPECT(collective_reads(comm, send, recv, stream) == 7.0f);

  /* cudaMemcpyAsync on the collective's stream: ordered before it. */
  // cppcheck-suppress redundantAssignment ; 8.0f was staged, never copied
  value = 9.0f;
  EXPECT(cudaMemcpyAsync(send, &value, sizeof value, cudaMemcpyHostToDevice,
                         stream) == cudaSuccess);
  EXPECT(collective_reads(comm, send, recv, stream) == 9.0f);

  EXPECT(cudaStreamDestroy(stream) == cudaSuccess);
  EXPECT(ncclMemFree(send) == ncclSuccess);
  EXPECT(ncclMemFree(recv) == ncclSuccess);
  done(comm);
}

/* What a device-to-host copy on `stream` (through the legacy entry point
 * for cudaStreamLegacy) reads of p now. */
static float read_on(cudaStream_t stream, const float *p)
{
  float host = 0;
  EXPECT(cudaMemcpyAsync(&host, p, sizeof host, cudaMemcpyDeviceToHost,
                         stream) == cudaSuccess);
  return host;
}

static void collectives_run_when_waited_for(void)
{
  ncclComm_t comm = one_rank_comm();
  float *send = NULL, *recv = NULL, value = 3.0f;
  cudaStream_t blocking, nonblocking;
  cudaEvent_t start, stop;
  float ms = -1;
  EXPECT(ncclMemAlloc((void **)&send, sizeof value) == ncclSuccess);
  EXPECT(ncclMemAlloc((void **)&recv, sizeof value) == ncclSuccess);
  EXPECT(cudaStreamCreate(&blocking) == cudaSuccess);
  EXPECT(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking) ==
         cudaSuccess);
  EXPECT(cudaEventCreate(&start) == cudaSuccess);
  EXPECT(cudaEventCreate(&stop) == cudaSuccess);

  /* Queued, not run (a read of recv now, on a stream that does not wait
   * for it, is the rule stream-data-race). */
  EXPECT(cudaMemcpyAsync(send, &value, sizeof value, cudaMemcpyHostToDevice,
                         blocking) == cudaSuccess);
  EXPECT(cudaEventRecord(start, blocking) == cudaSuccess);
  EXPECT(ncclAllReduce(send, recv, 1, ncclFloat, ncclSum, comm, blocking) ==
         ncclSuccess);
  EXPECT(cudaEventRecord(stop, blocking) == cudaSuccess);
  EXPECT(cudaEventElapsedTime(&ms, start, stop) == cudaErrorNotReady);
  /* Waiting for the event runs the work queued before it. */
  EXPECT(cudaEventSynchronize(stop) == cudaSuccess);
  EXPECT(cudaEventElapsedTime(&ms, start, stop) == cudaSuccess && ms >= 0);
  EXPECT(read_on(cudaStreamPerThread, recv) == 3.0f);

  /* The legacy default stream waits for a blocking stream's work ... */
  EXPECT(cudaMemsetAsync(recv, 0, sizeof value, blocking) == cudaSuccess);
  EXPECT(read_on(cudaStreamLegacy, recv) == 0.0f);
  /* ... not for a non-blocking one's (a read before this wait is the rule
   * stream-data-race), until that stream is waited for. */
  EXPECT(ncclAllReduce(send, recv, 1, ncclFloat, ncclSum, comm,
                       nonblocking) == ncclSuccess);
  EXPECT(cudaStreamSynchronize(nonblocking) == cudaSuccess);
  EXPECT(read_on(cudaStreamLegacy, recv) == 3.0f);

  EXPECT(cudaEventDestroy(start) == cudaSuccess);
  EXPECT(cudaEventDestroy(stop) == cudaSuccess);
  EXPECT(cudaStreamDestroy(blocking) == cudaSuccess);
  EXPECT(cudaStreamDestroy(nonblocking) == cudaSuccess);
  EXPECT(ncclMemFree(send) == ncclSuccess);
  EXPECT(ncclMemFree(recv) == ncclSuccess);
  done(comm);
}

/* Registers a 1 MiB buffer with NCCL version `version` and NCCL_LOCAL_REGISTER
 * `local` (NULL: unset) on a fresh one-rank communicator; returns what the
 * handle holds afterwards (SENTINEL if unwritten), deregistered already. */
static ncclWindow_t handle_after(const char *version, const char *local,
                                 int symmetric)
{
  setenv("SIM_NCCL_VERSION", version, 1);
  if (local)
    setenv("NCCL_LOCAL_REGISTER", local, 1);
  else
    unsetenv("NCCL_LOCAL_REGISTER");
  if (!symmetric)
    setenv("SIM_NO_SYMMETRIC", "1", 1);
  ncclComm_t comm = one_rank_comm();
  void *buf = NULL;
  ncclWindow_t win = SENTINEL, kept;
  EXPECT(ncclMemAlloc(&buf, 1 << 20) == ncclSuccess);
  EXPECT(ncclCommWindowRegister(comm, buf, 1 << 20, &win,
                                NCCL_WIN_COLL_SYMMETRIC) == ncclSuccess);
  kept = win;
  if (win != SENTINEL)
    EXPECT(ncclCommWindowDeregister(comm, win) == ncclSuccess);
  EXPECT(ncclMemFree(buf) == ncclSuccess);
  done(comm);
  unsetenv("SIM_NO_SYMMETRIC");
  unsetenv("NCCL_LOCAL_REGISTER");
  unsetenv("SIM_NCCL_VERSION");
  return kept;
}

static void handles_per_version(void)
{
  /* One rank, 2.28.3: no symmetric support before 2.28.7. */
  EXPECT(handle_after("22803", "0", 1) == SENTINEL);
  ncclWindow_t local = handle_after("22803", NULL, 1);
  EXPECT(local != SENTINEL && local != NULL);
  /* From 2.28.7 one rank has a window. */
  ncclWindow_t w = handle_after("22809", "0", 1);
  EXPECT(w != SENTINEL && w != NULL);
  /* Without symmetric support: 2.28.x leaves it, 2.30.7 writes NULL. */
  EXPECT(handle_after("22809", "0", 0) == SENTINEL);
  EXPECT(handle_after("23007", "0", 0) == NULL);
  EXPECT(handle_after("23007", NULL, 0) == NULL);
}

static void local_registration_is_shared(void)
{
  setenv("SIM_NCCL_VERSION", "22803", 1);
  ncclComm_t comm = one_rank_comm();
  void *buf = NULL;
  ncclWindow_t first = NULL, second = NULL;
  EXPECT(ncclMemAlloc(&buf, 1 << 20) == ncclSuccess);
  EXPECT(ncclCommWindowRegister(comm, buf, 1 << 20, &first,
                                NCCL_WIN_COLL_SYMMETRIC) == ncclSuccess);
  EXPECT(ncclCommWindowRegister(comm, buf, 1 << 20, &second,
                                NCCL_WIN_COLL_SYMMETRIC) == ncclSuccess);
  EXPECT(first != NULL && first == second);
  /* Each registration is undone once: twice succeeds. */
  EXPECT(ncclCommWindowDeregister(comm, first) == ncclSuccess);
  EXPECT(ncclCommWindowDeregister(comm, second) == ncclSuccess);
  EXPECT(ncclMemFree(buf) == ncclSuccess);
  done(comm);
  unsetenv("SIM_NCCL_VERSION");
}

static void registration_waits_for_group_end(const char *version,
                                             ncclWindow_t before_end)
{
  setenv("SIM_NCCL_VERSION", version, 1);
  ncclComm_t comm = one_rank_comm();
  void *buf = NULL;
  ncclWindow_t win = SENTINEL;
  EXPECT(ncclMemAlloc(&buf, 1 << 20) == ncclSuccess);
  EXPECT(ncclGroupStart() == ncclSuccess);
  EXPECT(ncclCommWindowRegister(comm, buf, 1 << 20, &win,
                                NCCL_WIN_COLL_SYMMETRIC) == ncclSuccess);
  EXPECT(win == before_end);
  EXPECT(ncclGroupEnd() == ncclSuccess);
  EXPECT(win != SENTINEL && win != NULL);
  if (win != SENTINEL && win != NULL)
    EXPECT(ncclCommWindowDeregister(comm, win) == ncclSuccess);
  EXPECT(ncclMemFree(buf) == ncclSuccess);
  done(comm);
  unsetenv("SIM_NCCL_VERSION");
}

static void captured_work_runs_at_launch(void)
{
  ncclComm_t comm = one_rank_comm();
  float *send = NULL, *recv = NULL, value = 5.0f, host = 0;
  cudaStream_t stream;
  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  EXPECT(ncclMemAlloc((void **)&send, sizeof value) == ncclSuccess);
  EXPECT(ncclMemAlloc((void **)&recv, sizeof value) == ncclSuccess);
  EXPECT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) ==
         cudaSuccess);
  EXPECT(cudaMemcpyAsync(send, &value, sizeof value, cudaMemcpyHostToDevice,
                         stream) == cudaSuccess);
  EXPECT(cudaStreamSynchronize(stream) == cudaSuccess);

  EXPECT(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) ==
         cudaSuccess);
  EXPECT(ncclAllReduce(send, recv, 1, ncclFloat, ncclSum, comm, stream) ==
         ncclSuccess);
  EXPECT(cudaStreamSynchronize(stream) == cudaErrorStreamCaptureUnsupported);
  EXPECT(cudaStreamEndCapture(stream, &graph) == cudaSuccess);
  EXPECT(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  /* Captured, not run: recv is still fresh memory. */
  EXPECT(cudaMemcpy(&host, recv, sizeof host, cudaMemcpyDeviceToHost) ==
         cudaSuccess);
  EXPECT(isnan(host));
  EXPECT(cudaGraphLaunch(exec, stream) == cudaSuccess);
  EXPECT(cudaStreamSynchronize(stream) == cudaSuccess);
  EXPECT(cudaMemcpy(&host, recv, sizeof host, cudaMemcpyDeviceToHost) ==
         cudaSuccess);
  EXPECT(host == 5.0f);
  /* The legacy default stream cannot be captured; ending a capture that
   * never began fails. */
  EXPECT(cudaStreamBeginCapture(cudaStreamLegacy,
                                cudaStreamCaptureModeThreadLocal) ==
         cudaErrorStreamCaptureUnsupported);
  cudaGraph_t none = NULL;
  EXPECT(cudaStreamEndCapture(stream, &none) == cudaErrorIllegalState);
  EXPECT(cudaGraphExecDestroy(exec) == cudaSuccess);
  EXPECT(cudaGraphDestroy(graph) == cudaSuccess);
  EXPECT(cudaStreamDestroy(stream) == cudaSuccess);
  EXPECT(ncclMemFree(send) == ncclSuccess);
  EXPECT(ncclMemFree(recv) == ncclSuccess);
  done(comm);
}

int main(void)
{
  fresh_memory_is_nan();
  cuda_malloc_is_garbage_until_set();
  copies_land_on_their_stream();
  collectives_run_when_waited_for();
  handles_per_version();
  local_registration_is_shared();
  registration_waits_for_group_end("22809", SENTINEL);
  registration_waits_for_group_end("23007", NULL);
  captured_work_runs_at_launch();
  if (test_failures == 0)
    printf("test_sim: all passed\n");
  return test_failures == 0 ? 0 : 1;
}
