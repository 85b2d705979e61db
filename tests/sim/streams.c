/* ncclsim: CUDA streams and events, and cudaDeviceSynchronize (see
 * sim.h). Simulated work completes when it is called, so nothing here
 * waits. */
#include "sim.h"

#include <stdlib.h>

/* The per-thread-default-stream entry points (cuda_runtime.h calls them
 * under CUDA_API_PER_THREAD_DEFAULT_STREAM). */
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream);

/* Both creation calls end here, so that an injection names only the call
 * the program made. */
static cudaError_t new_stream(cudaStream_t *stream)
{
  struct CUstream_st *s = calloc(1, sizeof *s);
  if (s == NULL)
    return cudaErrorMemoryAllocation;
  s->device = current_device;
  pthread_mutex_lock(&lock);
  install_exit_check();
  s->next = streams;
  streams = s;
  pthread_mutex_unlock(&lock);
  *stream = s;
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags)
{
  if (injected_failure("cudaStreamCreateWithFlags"))
    return cudaErrorUnknown;
  (void)flags; /* simulated work never waits, blocking stream or not */
  return new_stream(stream);
}

cudaError_t cudaStreamCreate(cudaStream_t *stream)
{
  if (injected_failure("cudaStreamCreate"))
    return cudaErrorMemoryAllocation;
  return new_stream(stream);
}

cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
  if (injected_failure("cudaStreamSynchronize"))
    return cudaErrorUnknown;
  (void)stream; /* every simulated operation completes when it is called */
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
  if (injected_failure("cudaStreamSynchronize"))
    return cudaErrorUnknown;
  check_shared_context("cudaStreamSynchronize", stream);
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
  if (injected_failure("cudaStreamDestroy"))
    return cudaErrorUnknown;
  int found;
  pthread_mutex_lock(&lock);
  LIST_UNLINK(streams, stream, found);
  pthread_mutex_unlock(&lock);
  if (!found)
    return cudaErrorInvalidValue;
  free(stream);
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
  check_shared_context("cudaDeviceSynchronize", NULL);
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
  if (injected_failure("cudaEventCreate"))
    return cudaErrorUnknown;
  struct CUevent_st *e = calloc(1, sizeof *e);
  if (e == NULL)
    return cudaErrorMemoryAllocation;
  pthread_mutex_lock(&lock);
  install_exit_check();
  e->next = events;
  events = e;
  pthread_mutex_unlock(&lock);
  *event = e;
  return cudaSuccess;
}

cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
  if (injected_failure("cudaEventRecord"))
    return cudaErrorUnknown;
  (void)stream;
  clock_gettime(CLOCK_MONOTONIC, &event->when);
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
  if (injected_failure("cudaEventRecord"))
    return cudaErrorUnknown;
  check_shared_context("cudaEventRecord", stream);
  return cudaEventRecord_ptsz(event, stream);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
  if (injected_failure("cudaEventSynchronize"))
    return cudaErrorUnknown;
  (void)event;
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
  if (injected_failure("cudaEventElapsedTime"))
    return cudaErrorUnknown;
  *ms = (float)((end->when.tv_sec - start->when.tv_sec) * 1e3 +
                (end->when.tv_nsec - start->when.tv_nsec) / 1e6);
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
  if (injected_failure("cudaEventDestroy"))
    return cudaErrorUnknown;
  int found;
  pthread_mutex_lock(&lock);
  LIST_UNLINK(events, event, found);
  pthread_mutex_unlock(&lock);
  if (!found)
    return cudaErrorInvalidValue;
  free(event);
  return cudaSuccess;
}
