/* ncclsim: the NCCL calls the examples make (see sim.h). */
#include "sim.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * NCCL
 * --------------------------------------------------------------------- */

const char *ncclGetErrorString(ncclResult_t result)
{
  switch (result) {
  case ncclSuccess: return "no error";
  case ncclUnhandledCudaError: return "unhandled cuda error";
  case ncclSystemError: return "unhandled system error";
  case ncclInternalError: return "internal error";
  case ncclInvalidArgument: return "invalid argument";
  case ncclInvalidUsage: return "invalid usage";
  default: return "unknown result code";
  }
}

const char *ncclGetLastError(ncclComm_t comm)
{
  (void)comm;
  return last_error;
}

ncclResult_t ncclGetVersion(int *version)
{
  *version = (int)env_long("SIM_NCCL_VERSION", NCCL_VERSION_CODE);
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
  if (injected_failure("ncclGetUniqueId"))
    return ncclSystemError;
  unsigned char bytes[12];
  if (getrandom(bytes, sizeof bytes, 0) != (ssize_t)sizeof bytes)
    return ncclSystemError;
  memset(id, 0, sizeof *id);
  int n = snprintf(id->internal, sizeof id->internal, SIM_MAGIC);
  for (size_t i = 0; i < sizeof bytes; i++)
    n += snprintf(id->internal + n, sizeof id->internal - (size_t)n, "%02x",
                  bytes[i]);
  return ncclSuccess;
}

/* NCCL >= 2.30 with NCCL_MULTI_RANK_GPU_ENABLE set to a non-zero number. */
static int multi_rank_gpu_allowed(void)
{
  int version = 0;
  ncclGetVersion(&version);
  return version >= NCCL_VERSION(2, 30, 0) &&
         env_long("NCCL_MULTI_RANK_GPU_ENABLE", 0) != 0;
}

static ncclResult_t init_rank(ncclComm_t *out, int nranks, ncclUniqueId id,
                              int rank, int cta_policy, const char *call)
{
  if (injected_failure(call))
    return ncclUnhandledCudaError;
  if (strncmp(id.internal, SIM_MAGIC, strlen(SIM_MAGIC)) != 0 ||
      memchr(id.internal, '\0', sizeof id.internal) == NULL)
    violation(NULL, "unique-id", call,
              "the ncclUniqueId was not made by ncclGetUniqueId (was it"
              " broadcast to every rank?)");
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    snprintf(last_error, sizeof last_error, "rank %d out of range for %d ranks",
             rank, nranks);
    return ncclInvalidArgument;
  }
  struct ncclComm *c = calloc(1, sizeof *c);
  if (c == NULL)
    return ncclSystemError;
  const char *base = getenv("SIM_DIR");
  if (base == NULL)
    base = getenv("TMPDIR");
  if (base == NULL)
    base = "/tmp";
  snprintf(c->dir, sizeof c->dir, "%s/%s", base,
           id.internal + strlen(SIM_MAGIC));
  if (mkdir(c->dir, 0700) != 0 && errno != EEXIST) {
    snprintf(last_error, sizeof last_error, "ncclsim: mkdir %s: %s", c->dir,
             strerror(errno));
    free(c);
    return ncclSystemError;
  }
  c->rank = rank;
  c->nranks = nranks;
  c->device = current_device;
  c->cta_policy = cta_policy;
  thread_rank = rank;

  exchange(c, "ncclCommInitRank", (size_t)nranks, c->device, NULL, 0);
  for (int r = 0; r < nranks; r++) {
    msg_header peer;
    fetch(c, r, &peer, NULL, 0);
    if (peer.size != (size_t)nranks)
      violation(
          c, "collective-calls", call,
          "rank %d created the communicator with %zu ranks, this rank with %d",
          r, peer.size, nranks);
    if (r != rank && peer.arg == c->device && !multi_rank_gpu_allowed())
      violation(c, "one-rank-per-device", call,
                "ranks %d and %d both use device %d in one communicator"
                " (NCCL >= 2.30 allows it with NCCL_MULTI_RANK_GPU_ENABLE=1)",
                r < rank ? r : rank, r < rank ? rank : r, c->device);
  }
  finish_exchange(c);

  pthread_mutex_lock(&lock);
  install_exit_check();
  c->next = comms;
  comms = c;
  pthread_mutex_unlock(&lock);
  *out = c;
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id,
                              int rank)
{
  return init_rank(comm, nranks, id, rank, NCCL_CTA_POLICY_DEFAULT,
                   "ncclCommInitRank");
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks,
                                    ncclUniqueId id, int rank,
                                    ncclConfig_t *config)
{
  int policy = NCCL_CTA_POLICY_DEFAULT;
  if (config != NULL && config->CTAPolicy != NCCL_CONFIG_UNDEF_INT)
    policy = config->CTAPolicy;
  return init_rank(comm, nranks, id, rank, policy, "ncclCommInitRankConfig");
}

ncclResult_t ncclMemAlloc(void **ptr, size_t size)
{
  if (injected_failure("ncclMemAlloc"))
    return ncclUnhandledCudaError;
  if (size == 0)
    return ncclInvalidArgument;
  *ptr = new_alloc(size, FROM_NCCL_MEM_ALLOC);
  return *ptr ? ncclSuccess : ncclSystemError;
}

ncclResult_t ncclMemFree(void *ptr)
{
  if (ptr == NULL)
    return ncclSuccess;
  pthread_mutex_lock(&lock);
  sim_alloc *a = find_alloc(ptr, 1);
  if (a == NULL || a->base != ptr)
    violation(NULL, "free-with-ncclMemFree", "ncclMemFree",
              "%p is not the start of an ncclMemAlloc buffer", ptr);
  else if (a->kind != FROM_NCCL_MEM_ALLOC)
    violation(NULL, "free-with-ncclMemFree", "ncclMemFree",
              "%p came from cudaMalloc; release it with cudaFree", ptr);
  for (struct ncclWindow_vidmem *w = windows; w; w = w->next)
    if (w->alloc == a)
      violation(w->comm, "deregister-before-free", "ncclMemFree",
                "the buffer at %p still has a registered window;"
                " call ncclCommWindowDeregister first",
                ptr);
  take_alloc(ptr);
  pthread_mutex_unlock(&lock);
  free(a->base);
  free(a);
  return ncclSuccess;
}

ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size,
                                    ncclWindow_t *win, int flags)
{
  const char *call = "ncclCommWindowRegister";
  if (injected_failure(call))
    return ncclUnhandledCudaError;
  pthread_mutex_lock(&lock);
  sim_alloc *a = find_alloc(buff, 1);
  pthread_mutex_unlock(&lock);
  if (a == NULL)
    violation(comm, "window-on-ncclMemAlloc", call,
              "%p is not device memory from ncclMemAlloc", buff);
  else if (a->kind != FROM_NCCL_MEM_ALLOC)
    violation(comm, "window-on-ncclMemAlloc", call,
              "%p comes from cudaMalloc; windows need ncclMemAlloc memory",
              buff);
  size_t offset = (size_t)((unsigned char *)buff - a->base);
  if (offset % NCCL_WIN_REQUIRED_ALIGNMENT != 0)
    violation(comm, "window-alignment", call,
              "%p is %zu bytes into its allocation; windows must start at a"
              " multiple of NCCL_WIN_REQUIRED_ALIGNMENT (%d)",
              buff, offset, NCCL_WIN_REQUIRED_ALIGNMENT);
  if (size == 0 || size > a->size - offset)
    violation(comm, "window-inside-allocation", call,
              "%zu bytes at %p run past the end of the %zu-byte allocation",
              size, buff, a->size);

  exchange(comm, call, size, flags, NULL, 0);
  for (int r = 0; r < comm->nranks; r++) {
    msg_header peer;
    fetch(comm, r, &peer, NULL, 0);
    if (peer.size != size || peer.arg != flags)
      violation(comm, "symmetric-registration", call,
                "rank %d registered %zu bytes (flags %lld), this rank %zu"
                " bytes (flags %d); every rank must register the same size",
                r, peer.size, peer.arg, size, flags);
  }
  finish_exchange(comm);

  if (env_long("SIM_NO_SYMMETRIC", 0)) {
    *win = NULL; /* as real NCCL does without symmetric support */
    return ncclSuccess;
  }
  struct ncclWindow_vidmem *w = calloc(1, sizeof *w);
  if (w == NULL)
    return ncclSystemError;
  *w = (struct ncclWindow_vidmem){
      .comm = comm, .alloc = a, .ptr = buff, .size = size};
  pthread_mutex_lock(&lock);
  w->next = windows;
  windows = w;
  pthread_mutex_unlock(&lock);
  *win = w;
  return ncclSuccess;
}

ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
  if (win == NULL)
    return ncclSuccess; /* real NCCL accepts the NULL window it handed out */
  if (injected_failure("ncclCommWindowDeregister"))
    return ncclUnhandledCudaError;
  pthread_mutex_lock(&lock);
  const struct ncclWindow_vidmem *w = windows;
  while (w != NULL && w != win)
    w = w->next;
  if (w == NULL) /* win may be freed memory: do not read it */
    violation(comm, "window-owner", "ncclCommWindowDeregister",
              "not a registered window (deregistered twice?)");
  if (win->comm != comm)
    violation(comm, "window-owner", "ncclCommWindowDeregister",
              "the window was registered on another communicator");
  int found;
  LIST_UNLINK(windows, win, found);
  pthread_mutex_unlock(&lock);
  (void)found; /* it is there: found above */
  free(win);
  return ncclSuccess;
}

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
  (void)stream;
  if (injected_failure(call))
    return ncclUnhandledCudaError;
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
  (void)stream;
  if (injected_failure(call))
    return ncclUnhandledCudaError;
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

ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
  if (injected_failure("ncclCommFinalize"))
    return ncclUnhandledCudaError;
  exchange(comm, "ncclCommFinalize", 0, 0, NULL, 0);
  finish_exchange(comm);
  return ncclSuccess;
}

static ncclResult_t release_comm(ncclComm_t comm, const char *call,
                                 int check_windows)
{
  pthread_mutex_lock(&lock);
  if (check_windows)
    for (struct ncclWindow_vidmem *w = windows; w; w = w->next)
      if (w->comm == comm)
        violation(comm, "deregister-before-destroy", call,
                  "a window of %zu bytes is still registered on this"
                  " communicator; call ncclCommWindowDeregister first",
                  w->size);
  int found;
  LIST_UNLINK(comms, comm, found);
  pthread_mutex_unlock(&lock);
  if (!found)
    return ncclInvalidArgument;
  free(comm);
  thread_rank = -1;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
  return release_comm(comm, "ncclCommDestroy", 1);
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
  mark_abort(comm->dir);
  return release_comm(comm, "ncclCommAbort", 0);
}
