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
  drop_event(event);
  free(event);
  return cudaSuccess;
}

/* CUDA graph capture. While a stream is being captured, what is queued on
 * it is recorded into the graph and not run, as CUDA does: the collectives
 * are recorded (collectives.c), and a launch of the instantiated graph runs
 * them in order on the launch's stream, so a result read before the launch
 * is the old one; so are the program's own kernels (each replay runs one
 * with a copy of its captured arguments). Other work queued on a capturing
 * stream (copies, memsets) is not simulated: it ends the program, naming
 * the call.
 * Synchronising a capturing stream fails, as in CUDA. */
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream,
                                        enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *graph);
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t stream);

int record_kernel(cudaStream_t stream, struct sim_kernel *k)
{
  return record_collective(stream, &(sim_node){.kernel = k});
}

int record_collective(cudaStream_t stream, const sim_node *node)
{
  if (!capturing(stream))
    return 0;
  struct CUgraph_st *g = stream->capture;
  if (g->n == g->capacity) {
    size_t more = g->capacity ? 2 * g->capacity : 16;
    sim_node *grown = realloc(g->nodes, more * sizeof *grown);
    if (grown == NULL)
      violation(NULL, "graph-capture", "a collective",
                "out of memory recording the graph");
    g->nodes = grown;
    g->capacity = more;
  }
  g->nodes[g->n++] = *node;
  return 1;
}

void refuse_in_capture(const char *call, cudaStream_t stream)
{
  if (capturing(stream))
    violation(NULL, "graph-capture", call,
              "queued on a stream being captured: the simulation captures"
              " only NCCL collectives and the program's own kernels");
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream,
                                   enum cudaStreamCaptureMode mode)
{
  (void)mode;
  if (!created(stream)) /* the simulation captures created streams only */
    return cudaErrorStreamCaptureUnsupported;
  if (stream->capture != NULL)
    return cudaErrorIllegalState;
  stream->capture = calloc(1, sizeof *stream->capture);
  return stream->capture != NULL ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream,
                                        enum cudaStreamCaptureMode mode)
{
  return cudaStreamBeginCapture(stream, mode);
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
                                  enum cudaStreamCaptureStatus *status)
{
  if (status == NULL)
    return cudaErrorInvalidValue;
  *status = capturing(stream) ? cudaStreamCaptureStatusActive
                              : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream,
                                       enum cudaStreamCaptureStatus *status);
cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream,
                                       enum cudaStreamCaptureStatus *status)
{
  return cudaStreamIsCapturing(stream, status);
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph)
{
  if (!capturing(stream))
    return cudaErrorIllegalState;
  *graph = stream->capture;
  stream->capture = NULL;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *graph)
{
  return cudaStreamEndCapture(stream, graph);
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
  if (graph == NULL)
    return cudaErrorInvalidValue;
  for (size_t i = 0; i < graph->n; i++)
    if (graph->nodes[i].kernel != NULL)
      free_kernel(graph->nodes[i].kernel);
  free(graph->nodes);
  free(graph);
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long flags)
{
  (void)flags;
  if (graph == NULL)
    return cudaErrorInvalidValue;
  struct CUgraphExec_st *e = calloc(1, sizeof *e);
  if (e != NULL)
    e->nodes = malloc((graph->n ? graph->n : 1) * sizeof *e->nodes);
  if (e == NULL || e->nodes == NULL) {
    free(e);
    return cudaErrorMemoryAllocation;
  }
  for (size_t i = 0; i < graph->n; i++) {
    e->nodes[i] = graph->nodes[i];
    if (graph->nodes[i].kernel != NULL && /* the exec's own arguments */
        (e->nodes[i].kernel = copy_kernel(graph->nodes[i].kernel)) == NULL)
      return cudaErrorMemoryAllocation;
    e->n = i + 1;
  }
  e->n = graph->n;
  *exec = e;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream)
{
  if (exec == NULL)
    return cudaErrorInvalidValue;
  if (env_long("SIM_REPLAYS_DO_NOTHING", 0) != 0)
    return cudaSuccess; /* a broken replay: runs nothing, says nothing */
  if (cupti_graph_launch != NULL)
    cupti_graph_launch(1);
  ncclResult_t res = ncclSuccess;
  for (size_t i = 0; i < exec->n && res == ncclSuccess; i++) {
    const sim_node *n = &exec->nodes[i];
    if (n->kernel != NULL) { /* launched again, with its own arguments */
      struct sim_kernel *k = copy_kernel(n->kernel);
      res = k != NULL && queue_kernel(k, stream) == cudaSuccess
                ? ncclSuccess
                : ncclSystemError;
      continue;
    }
    res = n->allgather
              ? ncclAllGather(n->send, n->recv, n->count, n->type, n->comm,
                              stream)
              : ncclAllReduce(n->send, n->recv, n->count, n->type, n->op,
                              n->comm, stream);
  }
  if (cupti_graph_launch != NULL)
    cupti_graph_launch(0);
  return res == ncclSuccess ? cudaSuccess : cudaErrorLaunchFailure;
}

cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t stream)
{
  return cudaGraphLaunch(exec, stream);
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
  if (exec == NULL)
    return cudaErrorInvalidValue;
  for (size_t i = 0; i < exec->n; i++)
    if (exec->nodes[i].kernel != NULL)
      free_kernel(exec->nodes[i].kernel);
  free(exec->nodes);
  free(exec);
  return cudaSuccess;
}
