/* ncclsim: CUDA streams and events, and cudaDeviceSynchronize (see
 * sim.h). Simulated work completes when it is called, except host-to-device
 * copies from pageable memory, which land when their stream is next used
 * or synchronised (cuda.c): synchronising here lands them. */
#include "sim.h"

#include <stdlib.h>

/* The per-thread-default-stream entry points (cuda_runtime.h calls them
 * under CUDA_API_PER_THREAD_DEFAULT_STREAM). */
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream);

/* Both creation calls end here, so that an injection names only the call
 * the program made. */
static cudaError_t new_stream(cudaStream_t *stream, unsigned int flags)
{
  struct CUstream_st *s = calloc(1, sizeof *s);
  if (s == NULL)
    return cudaErrorMemoryAllocation;
  s->device = current_device;
  s->nonblocking = (flags & cudaStreamNonBlocking) != 0;
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
  return new_stream(stream, flags);
}

cudaError_t cudaStreamCreate(cudaStream_t *stream)
{
  if (injected_failure("cudaStreamCreate"))
    return cudaErrorMemoryAllocation;
  return new_stream(stream, cudaStreamDefault);
}

cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
  if (injected_failure("cudaStreamSynchronize"))
    return cudaErrorUnknown;
  stream_sync_point(stream, 1);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
  if (injected_failure("cudaStreamSynchronize"))
    return cudaErrorUnknown;
  check_shared_context("cudaStreamSynchronize", stream);
  stream_sync_point(stream, 0);
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
  if (injected_failure("cudaStreamDestroy"))
    return cudaErrorUnknown;
  land_queue(stream); /* its work still completes */
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
  land_all_copies();
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
  event->queue = queue_key(stream, 1);
  clock_gettime(CLOCK_MONOTONIC, &event->when);
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
  if (injected_failure("cudaEventRecord"))
    return cudaErrorUnknown;
  check_shared_context("cudaEventRecord", stream);
  cudaError_t err = cudaEventRecord_ptsz(event, stream);
  if (err == cudaSuccess)
    event->queue = queue_key(stream, 0);
  return err;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
  if (injected_failure("cudaEventSynchronize"))
    return cudaErrorUnknown;
  if (event->queue != NULL)
    land_queue(event->queue);
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

/* CUDA graph capture, as far as tools/nccl_facts uses it: a stream may be
 * captured, and the capture ends in a graph that is never launched. */
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream,
                                        enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *graph);

cudaError_t cudaStreamBeginCapture(cudaStream_t stream,
                                   enum cudaStreamCaptureMode mode)
{
  (void)mode;
  return stream != NULL ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream,
                                        enum cudaStreamCaptureMode mode)
{
  return cudaStreamBeginCapture(stream, mode);
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph)
{
  (void)stream;
  *graph = malloc(1); /* stands for the graph; only destroyed */
  return *graph != NULL ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *graph)
{
  return cudaStreamEndCapture(stream, graph);
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
  free(graph);
  return cudaSuccess;
}
