/* ncclsim: the collectives, which really combine the ranks' data (see
 * sim.h). */
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

/* Corrupts one element of this rank's result if SIM_WRONG_RESULT asks. */
static void maybe_corrupt(const ncclComm_t comm, float *out, size_t n)
{
  const char *spec = getenv("SIM_WRONG_RESULT");
  if (spec == NULL || atoi(spec) != comm->rank)
    return;
  const char *colon = strchr(spec, ':');
  size_t index = colon ? (size_t)strtoull(colon + 1, NULL, 10) : 0;
  if (index < n)
    out[index] += 1.0f;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream)
{
  const char *call = "ncclAllReduce";
  if (injected_failure(call))
    return ncclUnhandledCudaError;
  sim_node node = {0, sendbuff, recvbuff, count, datatype, op, comm};
  if (record_collective(stream, &node))
    return ncclSuccess; /* runs when the graph is launched */
  stream_sync_point(stream, 0); /* after the stream's earlier work */
  if (datatype != ncclFloat || op != ncclSum) {
    snprintf(last_error, sizeof last_error,
             "ncclsim: only float sum is simulated");
    return ncclInvalidArgument;
  }
  size_t bytes = count * sizeof(float);
  check_buffer(comm, call, "send", sendbuff, bytes);
  check_buffer(comm, call, "receive", recvbuff, bytes);
  exchange(comm, call, count, 0, sendbuff, bytes);
  float *sum = calloc(count ? count : 1, sizeof(float));
  float *peer_data = malloc(bytes ? bytes : 1);
  if (sum == NULL || peer_data == NULL) {
    free(sum);
    free(peer_data);
    return ncclSystemError;
  }
  for (int r = 0; r < comm->nranks; r++) { /* rank order: same sum everywhere */
    msg_header peer;
    fetch(comm, r, &peer, peer_data, bytes);
    if (peer.size != count)
      violation(comm, "collective-calls", call,
                "rank %d passed count %zu, this rank %zu", r, peer.size, count);
    for (size_t i = 0; i < count; i++)
      sum[i] += peer_data[i];
  }
  finish_exchange(comm);
  maybe_corrupt(comm, sum, count);
  memcpy(recvbuff, sum, bytes);
  free(sum);
  free(peer_data);
  return ncclSuccess;
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff,
                           size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream)
{
  const char *call = "ncclAllGather";
  if (injected_failure(call))
    return ncclUnhandledCudaError;
  sim_node node = {1, sendbuff, recvbuff, sendcount, datatype, ncclSum, comm};
  if (record_collective(stream, &node))
    return ncclSuccess; /* runs when the graph is launched */
  stream_sync_point(stream, 0); /* after the stream's earlier work */
  if (datatype != ncclFloat) {
    snprintf(last_error, sizeof last_error, "ncclsim: only float is simulated");
    return ncclInvalidArgument;
  }
  size_t bytes = sendcount * sizeof(float);
  check_buffer(comm, call, "send", sendbuff, bytes);
  check_buffer(comm, call, "receive", recvbuff, bytes * (size_t)comm->nranks);
  exchange(comm, call, sendcount, 0, sendbuff, bytes);
  float *gathered = malloc(bytes * (size_t)comm->nranks + 1);
  if (gathered == NULL)
    return ncclSystemError;
  for (int r = 0; r < comm->nranks; r++) {
    msg_header peer;
    fetch(comm, r, &peer, gathered + (size_t)r * sendcount, bytes);
    if (peer.size != sendcount)
      violation(comm, "collective-calls", call,
                "rank %d passed count %zu, this rank %zu", r, peer.size,
                sendcount);
  }
  finish_exchange(comm);
  maybe_corrupt(comm, gathered, sendcount * (size_t)comm->nranks);
  memcpy(recvbuff, gathered, bytes * (size_t)comm->nranks);
  free(gathered);
  return ncclSuccess;
}
