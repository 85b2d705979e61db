/* ncclsim: the collectives, which really combine the ranks' data (see
 * sim.h). As in NCCL, a call checks its arguments and queues the
 * collective on its stream; the ranks' data meet when that queued work
 * runs (queues.c), so a result is there only after the stream is waited
 * for. */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Checks that a collective's buffer lies inside one allocation. */
static void check_buffer(ncclComm_t comm, const char *call, const char *what,
                         const void *p, size_t bytes)
{
  pthread_mutex_lock(&lock);
  sim_alloc *a = find_alloc(p, bytes);
  sim_alloc *start = find_alloc(p, 1);
  pthread_mutex_unlock(&lock);
  if (a == NULL)
    violation(comm, "buffers-inside-allocations", call,
              "the %s buffer %p needs %zu bytes, but %s", what, p, bytes,
              start ? "its allocation ends sooner" : "it is not device memory");
}

/* Corrupts elements of this rank's result if SIM_WRONG_RESULT asks
 * (R, R:I or R:I,J,...: index 0 when none is given). */
static void maybe_corrupt(const ncclComm_t comm, float *out, size_t n)
{
  const char *spec = getenv("SIM_WRONG_RESULT");
  if (spec == NULL || atoi(spec) != comm->rank)
    return;
  const char *at = strchr(spec, ':');
  do {
    size_t index = at ? (size_t)strtoull(at + 1, (char **)&at, 10) : 0;
    if (index < n)
      out[index] += 1.0f;
  } while (at != NULL && *at == ',');
}

/* float 4 bytes; float16 6 and bfloat16 9 (nccl.h 2.30.7) 2; the rest
 * that call_collective lets through (8-bit types) 1. */
size_t sim_element_size(const sim_node *node)
{
  if (node->type == ncclFloat)
    return sizeof(float);
  return (int)node->type == 6 || (int)node->type == 9 ? 2 : 1;
}

/* The first AllGather on the copy engines of a communicator (CTAPolicy
 * ZERO, the receive buffer in a window) first registers NCCL's own
 * synchronisation window, which every rank does together: that call
 * returns on no rank before all have made it (NCCL 2.28.3 and 2.30.7,
 * src/ce_coll.cc ncclCeInit, run from src/group.cc; on an H100 with
 * 2.30.7, every rank waited inside ncclAllGather for one held back). */
static void ce_first_use(const sim_node *node, size_t out_bytes)
{
  ncclComm_t comm = node->comm;
  if (!node->allgather || comm->nranks == 1 || comm->ce_ready ||
      !(comm->cta_policy & NCCL_CTA_POLICY_ZERO) ||
      !in_symmetric_window(comm, node->recv, out_bytes))
    return;
  exchange(comm, LANE_HOST, "ncclAllGather", 0, 0, NULL, 0);
  finish_exchange(comm, LANE_HOST);
  comm->ce_ready = 1;
}

/* The host call: checks, then records (graph capture) or queues. A
 * replay (cudaGraphLaunch) queues it again: CUDA's launch, by the
 * program's thread, not a call of NCCL's, which neither asks for a ready
 * communicator nor leaves it in progress. */
static ncclResult_t call_collective(const char *call, const sim_node *node,
                                    cudaStream_t stream, int replay)
{
  if (injected_failure(call))
    return ncclUnhandledCudaError;
  if (node->comm == NULL) { /* NCCL 2.30.7 src/enqueue.cc ncclEnqueueCheck */
    nccl_warn(call, "%s : comm argument is NULL", call + strlen("nccl"));
    return ncclInvalidArgument;
  }
  if (!replay && ensure_ready(node->comm, call) != ncclSuccess)
    return ncclInvalidArgument;
  one_thread_per_rank(node->comm);
  /* AllReduce: float sums; AllGather: floats, bytes (the facts probe's;
   * fp8, ncclFloat8e4m3 10 and ncclFloat8e5m2 11 from NCCL 2.24, moves as
   * bytes) or 16-bit elements (float16 6, bfloat16 9), moved as such. */
  const int bytes_ok = node->allgather &&
                       (node->type == ncclInt8 || node->type == ncclUint8 ||
                        (int)node->type == 6 || (int)node->type == 9 ||
                        (int)node->type == 10 || (int)node->type == 11);
  if ((node->type != ncclFloat && !bytes_ok) ||
      (!node->allgather && node->op != ncclSum)) {
    snprintf(last_error, sizeof last_error,
             "ncclsim: only %s simulated",
             node->allgather ? "float, 16-bit and 8-bit types are"
                             : "float sum is");
    return ncclInvalidArgument;
  }
  size_t bytes = node->count * sim_element_size(node);
  int n = node->comm->nranks;
  check_buffer(node->comm, call, "send", node->send, bytes);
  check_buffer(node->comm, call, "receive", node->recv,
               node->allgather ? bytes * (size_t)n : bytes);
  ce_first_use(node, bytes * (size_t)n);
  if (record_collective(stream, node)) /* runs when the graph is launched */
    return replay ? ncclSuccess : nonblocking_result(node->comm, ncclSuccess);
  work_item item = {.kind = WORK_COLLECTIVE, .node = *node};
  launched_by_nccl_thread = !replay && node->comm->nb.nonblocking && n > 1;
  int queued = enqueue(stream, 0, &item);
  launched_by_nccl_thread = 0;
  ncclResult_t res = queued ? ncclSuccess : ncclSystemError;
  return replay ? res : nonblocking_result(node->comm, res);
}

ncclResult_t replay_collective(const sim_node *node, cudaStream_t stream)
{
  return call_collective(node->allgather ? "ncclAllGather" : "ncclAllReduce",
                         node, stream, 1);
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream)
{
  NOTE_CALLER();
  sim_node node = {0, sendbuff, recvbuff, count, datatype, op, comm, NULL};
  return call_collective("ncclAllReduce", &node, stream, 0);
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff,
                           size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream)
{
  NOTE_CALLER();
  sim_node node = {1, sendbuff, recvbuff, sendcount, datatype, ncclSum, comm, NULL};
  return call_collective("ncclAllGather", &node, stream, 0);
}

/* The queued work: every rank's send buffer as it is now, combined in
 * rank order (the same sum everywhere), into this rank's receive buffer.
 * It starts when every rank's GPU is ready for it: each says when its is
 * in the exchange (sim.h). */
long long run_collective(const sim_node *node, long long ready_ns)
{
  const char *call = node->allgather ? "ncclAllGather" : "ncclAllReduce";
  ncclComm_t comm = node->comm;
  const size_t size = sim_element_size(node);
  const size_t count = node->count, bytes = count * size;
  const size_t n = (size_t)comm->nranks;
  const size_t out_count = node->allgather ? count * n : count;
  exchange(comm, LANE_WORK, call, count, ready_ns, node->send, bytes);
  long long start_ns = ready_ns;
  /* (Written before it is read: a sum starts from rank 0's data as 0 +
   * it. Reading fresh pages first would map the zero page, and each first
   * write then copies it and flushes every thread's TLB.) */
  unsigned char *out = malloc(out_count ? out_count * size : 1);
  unsigned char *peer_data = malloc(bytes ? bytes : 1);
  if (out == NULL || peer_data == NULL)
    violation(comm, "collective-calls", call, "out of memory");
  for (int r = 0; r < comm->nranks; r++) {
    msg_header peer;
    fetch(comm, LANE_WORK, r, &peer, peer_data, bytes);
    if (peer.size != count)
      violation(comm, "collective-calls", call,
                "rank %d passed count %zu, this rank %zu", r, peer.size, count);
    if (peer.arg > start_ns)
      start_ns = peer.arg;
    if (node->allgather)
      memcpy(out + (size_t)r * bytes, peer_data, bytes);
    else if (r == 0) /* float sums (call_collective) */
      for (size_t i = 0; i < count; i++)
        ((float *)(void *)out)[i] = 0.0f + ((const float *)(void *)peer_data)[i];
    else
      for (size_t i = 0; i < count; i++)
        ((float *)(void *)out)[i] += ((const float *)(void *)peer_data)[i];
  }
  finish_exchange(comm, LANE_WORK);
  if (size == sizeof(float))
    maybe_corrupt(comm, (float *)(void *)out, out_count);
  memcpy(node->recv, out, out_count * size);
  free(out);
  free(peer_data);
  return start_ns;
}
