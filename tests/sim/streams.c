/* ncclsim: CUDA streams and events, and cudaDeviceSynchronize (see
 * sim.h). Work queued on a stream runs when a host call waits for it
 * (queues.c): synchronising a stream, an event or the device here runs it.
 * An event is queued work too: it takes its time when it runs. */
#include "sim.h"

#include <stdlib.h>

/* The per-thread-default-stream entry points (cuda_runtime.h calls them
 * under CUDA_API_PER_THREAD_DEFAULT_STREAM). */
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event,
                                     unsigned int flags);

/* 1 for a stream the program created, 0 for the special handles: 0 and
 * cudaStreamLegacy (the legacy default stream), cudaStreamPerThread. */
static int created(cudaStream_t stream)
{
  return stream != NULL && stream != cudaStreamLegacy &&
         stream != cudaStreamPerThread;
}

static int capturing(cudaStream_t stream)
{
  return created(stream) && stream->capture != NULL;
}

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

/* A synchronisation that fails or never returns (SIM_FAIL, SIM_HANG) does
 * so after the stream's work has run: the GPU runs queued work whatever
 * the host thread that waits for it does, so the other ranks' collectives
 * complete, as on a GPU. */
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
  if (capturing(stream))
    return cudaErrorStreamCaptureUnsupported;
  stream_sync_point(stream, 1);
  if (injected_failure("cudaStreamSynchronize"))
    return cudaErrorUnknown;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
  if (capturing(stream))
    return cudaErrorStreamCaptureUnsupported;
  check_shared_context("cudaStreamSynchronize", stream);
  stream_sync_point(stream, 0);
  if (injected_failure("cudaStreamSynchronize"))
    return cudaErrorUnknown;
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
  if (injected_failure("cudaStreamDestroy"))
    return cudaErrorUnknown;
  land_queue(stream); /* its work still completes */
  order_stream_gone(stream);
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
  land_device_work();
  order_host_waits_all();
  return cudaSuccess;
}

/* Both creation calls end here (the flags change nothing simulated: an
 * event times what it can, cudaEventDisableTiming or not). */
static cudaError_t new_event(cudaEvent_t *event)
{
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

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
  if (injected_failure("cudaEventCreate"))
    return cudaErrorUnknown;
  return new_event(event);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
  if (flags & ~(unsigned)(cudaEventBlockingSync | cudaEventDisableTiming |
                          cudaEventInterprocess))
    return cudaErrorInvalidValue;
  return new_event(event);
}

cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
  if (injected_failure("cudaEventRecord"))
    return cudaErrorUnknown;
  work_item item = {.kind = WORK_EVENT, .event = event};
  return enqueue(stream, 1, &item) ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
  if (injected_failure("cudaEventRecord"))
    return cudaErrorUnknown;
  check_shared_context("cudaEventRecord", stream);
  work_item item = {.kind = WORK_EVENT, .event = event};
  return enqueue(stream, 0, &item) ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
  land_event(event); /* before an injection: as cudaStreamSynchronize */
  order_host_waits_event(event->order);
  if (injected_failure("cudaEventSynchronize"))
    return cudaErrorUnknown;
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
  if (injected_failure("cudaEventElapsedTime"))
    return cudaErrorUnknown;
  /* As CUDA: an event never recorded, or whose record has not run yet. */
  for (const struct CUevent_st *e = start; e; e = e == start ? end : NULL)
    if (e->recorded == 0 ||
        __atomic_load_n(&e->landed, __ATOMIC_ACQUIRE) < e->recorded)
      return e->recorded == 0 ? cudaErrorInvalidResourceHandle
                              : cudaErrorNotReady;
  /* The simulated GPU's time (clock.c), not the host's: the work between
   * them, whatever the machine's load. */
  *ms = (float)((double)(end->when_ns - start->when_ns) / 1e6);
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
  drop_event(event);
  order_event_gone(event->order);
  free(event);
  return cudaSuccess;
}

/* Work queued on `stream` after this waits for the event's last record
 * (none: it waits for nothing). The simulation runs the work before that
 * record at once (a host wait where a GPU only orders the streams), so that
 * what runs first is what the order puts first. */
static cudaError_t wait_event(cudaStream_t stream, cudaEvent_t event,
                              unsigned int flags, int ptds_entry)
{
  if (event == NULL || (flags & ~(unsigned)cudaEventWaitExternal) != 0)
    return cudaErrorInvalidValue;
  if (capturing(stream))
    return cudaErrorStreamCaptureUnsupported;
  land_event(event);
  order_stream_waits_event(queue_key(stream, ptds_entry),
                           queue_kind(stream, ptds_entry), event->order);
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event,
                                     unsigned int flags)
{
  return wait_event(stream, event, flags, 1);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                unsigned int flags)
{
  check_shared_context("cudaStreamWaitEvent", stream);
  return wait_event(stream, event, flags, 0);
}
