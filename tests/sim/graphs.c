/* ncclsim: CUDA graphs (see sim.h): capture, instantiation, replay. */
#include "sim.h"

#include <stdlib.h>

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

static cudaError_t graph_launch(cudaGraphExec_t exec, cudaStream_t stream)
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
    res = replay_collective(n, stream);
  }
  if (cupti_graph_launch != NULL)
    cupti_graph_launch(0);
  return res == ncclSuccess ? cudaSuccess : cudaErrorLaunchFailure;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream)
{
  NOTE_CALLER();
  return graph_launch(exec, stream);
}

cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t stream)
{
  NOTE_CALLER();
  return graph_launch(exec, stream);
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
