/*
 * ncclsim: a host-memory simulation of the CUDA runtime and NCCL calls that
 * the examples make, for testing them on machines without a GPU. It is linked
 * in place of libcudart and libnccl, with the real cuda_runtime.h and nccl.h
 * declarations, and is never part of what users build or install.
 *
 * "Device" memory is host memory. Ranks meet through files in a directory
 * named after the ncclUniqueId (under SIM_DIR, else TMPDIR, else /tmp), so
 * the same code works for threads (pthread build) and processes (MPI
 * build). Collectives really combine the ranks' data.
 *
 * It also enforces the rules of the symmetric-memory lifecycle that real
 * NCCL does not reliably catch. A violation prints
 *   ncclsim: RULE VIOLATION [rule] rank R in CALL: details
 * and ends the process with status SIM_EXIT_VIOLATION (3).
 *
 * Settings (environment):
 *   SIM_DEVICES=N        visible devices (default 8; 0 = no GPU)
 *   SIM_NCCL_VERSION=C   version code ncclGetVersion reports (default: the
 *                        headers' NCCL_VERSION_CODE)
 *   SIM_NO_SYMMETRIC=1   no symmetric support: windows come back NULL
 *   SIM_FAIL=CALL:R      CALL fails on rank R (e.g. ncclMemAlloc:2)
 *   SIM_WRONG_RESULT=R[:I]  rank R's collective result is wrong at index I
 *   SIM_TIMEOUT_MS=T     how long a rank waits for its peers (default 10000)
 * Like NCCL >= 2.30, it lets several ranks of one communicator use one
 * device only with NCCL_MULTI_RANK_GPU_ENABLE set to a non-zero number and a
 * simulated version >= 2.30. Ranks that are threads sharing a device share
 * its context: a call on the legacy default stream (a program built without
 * per-thread default streams) or cudaDeviceSynchronize there would wait for
 * the other ranks' queued collectives, so it is a rule violation.
 * cuBLAS's SGEMM (only with HAVE_CUBLAS) is accepted and not computed (only
 * --bench --overlap calls it, and its result is not used). A "rank" is the rank
 * of the calling thread's communicator, or its current device before it has
 * one.
 */
#if HAVE_CUBLAS
#include <cublas_v2.h>
#endif
#include <cuda_runtime.h>
#include <nccl.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SIM_EXIT_VIOLATION 3
#define SIM_MAGIC          "ncclsim:"
#define PATH_LEN           512

/* ------------------------------------------------------------------------
 * Process-wide state, guarded by one lock (ranks may be threads).
 * --------------------------------------------------------------------- */

enum alloc_kind { FROM_NCCL_MEM_ALLOC, FROM_CUDA_MALLOC };

typedef struct sim_alloc {
  struct sim_alloc *next;
  unsigned char *base;
  size_t size;
  enum alloc_kind kind;
  int device;
} sim_alloc;

struct ncclComm {
  struct ncclComm *next;
  char dir[PATH_LEN];
  int rank, nranks, device;
  unsigned long seq; /* rendezvous counter: same sequence on every rank */
  int cta_policy;
};

struct ncclWindow_vidmem {
  struct ncclWindow_vidmem *next;
  struct ncclComm *comm;
  sim_alloc *alloc;
  void *ptr;
  size_t size;
};

struct CUstream_st {
  struct CUstream_st *next;
  int device;
};

struct CUevent_st {
  struct CUevent_st *next;
  struct timespec when;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sim_alloc *allocs;
static struct ncclComm *comms;
static struct ncclWindow_vidmem *windows;
static struct CUstream_st *streams;
static struct CUevent_st *events;
static int exit_check_installed;

static _Thread_local int current_device = 0;
static _Thread_local int thread_rank = -1;
static _Thread_local char last_error[1024];

/* ------------------------------------------------------------------------
 * Settings and reporting
 * --------------------------------------------------------------------- */

static long env_long(const char *name, long fallback)
{
  const char *text = getenv(name);
  if (text == NULL || *text == '\0')
    return fallback;
  char *end;
  long value = strtol(text, &end, 10);
  if (*end != '\0') {
    fprintf(stderr, "ncclsim: bad %s='%s'\n", name, text);
    _exit(SIM_EXIT_VIOLATION);
  }
  return value;
}

static int sim_rank(void)
{
  return thread_rank >= 0 ? thread_rank : current_device;
}

/* Marks a communicator directory so that peers waiting there stop too. */
static void mark_abort(const char *dir)
{
  char path[PATH_LEN + 16];
  snprintf(path, sizeof path, "%s/abort", dir);
  int fd = open(path, O_CREAT | O_WRONLY, 0600);
  if (fd >= 0)
    close(fd);
}

static _Noreturn void violation(const struct ncclComm *comm, const char *rule,
                                const char *call, const char *fmt, ...)
{
  char details[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(details, sizeof details, fmt, ap);
  va_end(ap);
  fflush(stdout);
  fprintf(stderr, "ncclsim: RULE VIOLATION [%s] rank %d in %s: %s\n", rule,
          comm ? comm->rank : sim_rank(), call, details);
  if (comm)
    mark_abort(comm->dir);
  _exit(SIM_EXIT_VIOLATION);
}

/* SIM_FAIL=CALL:RANK: does this call fail here? */
static int injected_failure(const char *call)
{
  const char *spec = getenv("SIM_FAIL");
  if (spec == NULL)
    return 0;
  const char *colon = strrchr(spec, ':');
  if (colon == NULL || (size_t)(colon - spec) != strlen(call) ||
      strncmp(spec, call, strlen(call)) != 0)
    return 0;
  if (atoi(colon + 1) != sim_rank())
    return 0;
  snprintf(last_error, sizeof last_error,
           "ncclsim: injected failure of %s on rank %d", call, sim_rank());
  return 1;
}

/* At exit: anything still allocated, registered or alive is a leak. */
static void check_leaks(void)
{
  int leaks = 0;
  for (sim_alloc *a = allocs; a; a = a->next, leaks++)
    fprintf(
        stderr, "ncclsim: LEAK: %zu bytes from %s on device %d never freed\n",
        a->size, a->kind == FROM_NCCL_MEM_ALLOC ? "ncclMemAlloc" : "cudaMalloc",
        a->device);
  for (struct ncclWindow_vidmem *w = windows; w; w = w->next, leaks++)
    fprintf(
        stderr,
        "ncclsim: LEAK: window of %zu bytes on rank %d never deregistered\n",
        w->size, w->comm->rank);
  for (struct ncclComm *c = comms; c; c = c->next, leaks++)
    fprintf(stderr, "ncclsim: LEAK: communicator of rank %d never destroyed\n",
            c->rank);
  for (struct CUstream_st *s = streams; s; s = s->next, leaks++)
    fprintf(stderr, "ncclsim: LEAK: stream on device %d never destroyed\n",
            s->device);
  for (struct CUevent_st *e = events; e; e = e->next, leaks++)
    fprintf(stderr, "ncclsim: LEAK: event never destroyed\n");
  if (leaks > 0) {
    fprintf(stderr,
            "ncclsim: RULE VIOLATION [no-leaks] %d object(s) left at exit\n",
            leaks);
    fflush(stderr);
    _exit(SIM_EXIT_VIOLATION);
  }
}

static void install_exit_check(void)
{
  if (!exit_check_installed) {
    exit_check_installed = 1;
    atexit(check_leaks);
  }
}

/* The allocation holding [p, p+len), or NULL. Caller holds the lock. */
static sim_alloc *find_alloc(const void *p, size_t len)
{
  const unsigned char *b = p;
  for (sim_alloc *a = allocs; a; a = a->next)
    if (b >= a->base && b < a->base + a->size)
      return (len <= (size_t)(a->base + a->size - b)) ? a : NULL;
  return NULL;
}

/* ------------------------------------------------------------------------
 * Rendezvous: for its n-th collective call on a communicator, every rank
 * writes <dir>/<n>.<rank> (a header and a payload), then waits until all
 * ranks' files for n exist. Files of call n-1 are removed once call n is
 * complete, since by then every rank has read them.
 * --------------------------------------------------------------------- */

typedef struct msg_header {
  char call[64];
  size_t size;   /* call-specific: bytes or count */
  long long arg; /* call-specific: device, flags, ... */
  size_t payload;
} msg_header;

static void msg_path(const struct ncclComm *c, unsigned long seq, int rank,
                     char *path, size_t len)
{
  snprintf(path, len, "%s/%lu.%d", c->dir, seq, rank);
}

static void write_all(int fd, const void *buf, size_t len, const char *path)
{
  const unsigned char *p = buf;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0) {
      fprintf(stderr, "ncclsim: write %s: %s\n", path, strerror(errno));
      _exit(SIM_EXIT_VIOLATION);
    }
    p += n;
    len -= (size_t)n;
  }
}

static void post(struct ncclComm *c, const msg_header *h, const void *payload)
{
  char path[PATH_LEN + 32], tmp[PATH_LEN + 40];
  msg_path(c, c->seq, c->rank, path, sizeof path);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_CREAT | O_TRUNC | O_WRONLY, 0600);
  if (fd < 0) {
    fprintf(stderr, "ncclsim: cannot create %s: %s\n", tmp, strerror(errno));
    _exit(SIM_EXIT_VIOLATION);
  }
  write_all(fd, h, sizeof *h, tmp);
  if (h->payload > 0)
    write_all(fd, payload, h->payload, tmp);
  close(fd);
  rename(tmp, path); /* peers see the whole file or none */
}

/* Waits for every rank's message for this call; a rank that never arrives
 * is reported after SIM_TIMEOUT_MS instead of hanging. */
static void wait_peers(struct ncclComm *c, const char *call)
{
  long timeout_ms = env_long("SIM_TIMEOUT_MS", 10000);
  char path[PATH_LEN + 32];
  struct timespec nap = {0, 200 * 1000};
  long waited_us = 0;
  for (int r = 0; r < c->nranks; r++) {
    msg_path(c, c->seq, r, path, sizeof path);
    while (access(path, F_OK) != 0) {
      char abort_path[PATH_LEN + 16];
      snprintf(abort_path, sizeof abort_path, "%s/abort", c->dir);
      if (access(abort_path, F_OK) == 0) {
        fprintf(stderr,
                "ncclsim: rank %d stops in %s: a peer reported a violation\n",
                c->rank, call);
        _exit(SIM_EXIT_VIOLATION);
      }
      if (waited_us / 1000 > timeout_ms)
        violation(
            c, "collective-calls", call,
            "rank %d never arrived at this call (collective #%lu) within %ld ms;"
            " every rank must make the same collective calls",
            r, c->seq, timeout_ms);
      nanosleep(&nap, NULL);
      waited_us += 200;
    }
  }
  if (c->seq > 0) {
    msg_path(c, c->seq - 1, c->rank, path, sizeof path);
    unlink(path);
  }
}

/* Reads rank r's message for the current call; payload (if any) into buf. */
static void fetch(const struct ncclComm *c, int r, msg_header *h, void *buf,
                  size_t buf_len)
{
  char path[PATH_LEN + 32];
  msg_path(c, c->seq, r, path, sizeof path);
  FILE *f = fopen(path, "rb");
  if (f == NULL || fread(h, sizeof *h, 1, f) != 1 ||
      (buf != NULL && h->payload > 0 &&
       fread(buf, 1, h->payload < buf_len ? h->payload : buf_len, f) !=
           (h->payload < buf_len ? h->payload : buf_len))) {
    fprintf(stderr, "ncclsim: cannot read %s\n", path);
    _exit(SIM_EXIT_VIOLATION);
  }
  fclose(f);
}

/* One collective step: post, wait, and check that every rank made the same
 * call with the same `size`. */
static void exchange(struct ncclComm *c, const char *call, size_t size,
                     long long arg, const void *payload, size_t payload_len)
{
  msg_header h = {.size = size, .arg = arg, .payload = payload_len};
  snprintf(h.call, sizeof h.call, "%s", call);
  post(c, &h, payload);
  wait_peers(c, call);
  for (int r = 0; r < c->nranks; r++) {
    msg_header peer;
    fetch(c, r, &peer, NULL, 0);
    if (strcmp(peer.call, call) != 0)
      violation(c, "collective-calls", call,
                "rank %d made a different call at this point (%s); every rank"
                " must make the same collective calls in the same order",
                r, peer.call);
  }
}

static void finish_exchange(struct ncclComm *c) { c->seq++; }

/* ------------------------------------------------------------------------
 * CUDA runtime
 * --------------------------------------------------------------------- */

static int visible_devices(void) { return (int)env_long("SIM_DEVICES", 8); }

/* Does another rank of this process use this thread's device? Then they
 * share one CUDA context (threads on one GPU). */
static const struct ncclComm *device_sharer(void)
{
  const struct ncclComm *found = NULL;
  pthread_mutex_lock(&lock);
  for (const struct ncclComm *c = comms; c && !found; c = c->next)
    if (c->device == current_device && c->rank != thread_rank)
      found = c;
  pthread_mutex_unlock(&lock);
  return found;
}

/* The rule for ranks that share a device's context: nothing may wait for
 * the whole device or the legacy default stream (see the header). */
static void check_shared_context(const char *call, cudaStream_t stream)
{
  if (stream != NULL)
    return; /* a stream of the program's own */
  const struct ncclComm *other = device_sharer();
  if (other != NULL)
    violation(NULL, "shared-gpu-legacy-stream", call,
              "rank %d shares device %d with this thread; %s waits for the"
              " legacy default stream or the whole device, and so for that"
              " rank's queued collectives (a deadlock on a real GPU): build"
              " with -DCUDA_API_PER_THREAD_DEFAULT_STREAM=1 and use streams",
              other->rank, current_device, call);
}

cudaError_t cudaGetDeviceCount(int *count)
{
  *count = visible_devices();
  if (*count <= 0) {
    *count = 0;
    return cudaErrorNoDevice;
  }
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
  if (visible_devices() <= 0)
    return cudaErrorNoDevice;
  if (device < 0 || device >= visible_devices())
    return cudaErrorInvalidDevice;
  current_device = device;
  return cudaSuccess;
}

/* An H200's multiprocessor count; the only attribute the programs ask for. */
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr,
                                   int device)
{
  if (device < 0 || device >= visible_devices())
    return cudaErrorInvalidDevice;
  if (attr != cudaDevAttrMultiProcessorCount)
    return cudaErrorInvalidValue;
  *value = 132;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
  *device = current_device;
  return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t error)
{
  switch (error) {
  case cudaSuccess: return "no error";
  case cudaErrorNoDevice: return "no CUDA-capable device is detected";
  case cudaErrorInvalidDevice: return "invalid device ordinal";
  case cudaErrorMemoryAllocation: return "out of memory";
  case cudaErrorInvalidValue: return "invalid argument";
  default: return "unknown error";
  }
}

const char *cudaGetErrorName(cudaError_t error)
{
  switch (error) {
  case cudaSuccess: return "cudaSuccess";
  case cudaErrorNoDevice: return "cudaErrorNoDevice";
  case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
  case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
  case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
  default: return "cudaErrorUnknown";
  }
}

static void *new_alloc(size_t size, enum alloc_kind kind)
{
  sim_alloc *a = calloc(1, sizeof *a);
  void *p = NULL;
  if (a == NULL ||
      posix_memalign(&p, NCCL_WIN_REQUIRED_ALIGNMENT, size ? size : 1) != 0) {
    free(a);
    return NULL;
  }
  memset(p, 0xA5, size); /* device memory starts as garbage, not zeros */
  *a = (sim_alloc){
      .base = p, .size = size, .kind = kind, .device = current_device};
  pthread_mutex_lock(&lock);
  install_exit_check();
  a->next = allocs;
  allocs = a;
  pthread_mutex_unlock(&lock);
  return p;
}

/* Unlinks the allocation that starts at p; NULL if there is none. */
static sim_alloc *take_alloc(const void *p)
{
  for (sim_alloc **link = &allocs; *link; link = &(*link)->next)
    if ((*link)->base == p) {
      sim_alloc *a = *link;
      *link = a->next;
      return a;
    }
  return NULL;
}

cudaError_t cudaMalloc(void **ptr, size_t size)
{
  if (injected_failure("cudaMalloc"))
    return cudaErrorMemoryAllocation;
  *ptr = new_alloc(size, FROM_CUDA_MALLOC);
  return *ptr ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFree(void *ptr)
{
  if (ptr == NULL)
    return cudaSuccess;
  pthread_mutex_lock(&lock);
  sim_alloc *a = find_alloc(ptr, 1);
  if (a != NULL && a->kind == FROM_NCCL_MEM_ALLOC)
    violation(NULL, "free-with-ncclMemFree", "cudaFree",
              "%p came from ncclMemAlloc; release it with ncclMemFree", ptr);
  a = take_alloc(ptr);
  pthread_mutex_unlock(&lock);
  if (a == NULL)
    return cudaErrorInvalidValue;
  free(a->base);
  free(a);
  return cudaSuccess;
}

static cudaError_t copy(void *dst, const void *src, size_t count,
                        enum cudaMemcpyKind kind)
{
  if (injected_failure("cudaMemcpy"))
    return cudaErrorInvalidValue;
  pthread_mutex_lock(&lock);
  int dst_dev = find_alloc(dst, count) != NULL;
  int src_dev = find_alloc(src, count) != NULL;
  pthread_mutex_unlock(&lock);
  /* Like real CUDA, a copy whose device side is not device memory fails. */
  if ((kind == cudaMemcpyHostToDevice && !dst_dev) ||
      (kind == cudaMemcpyDeviceToHost && !src_dev) ||
      (kind == cudaMemcpyDeviceToDevice && !(dst_dev && src_dev)))
    return cudaErrorInvalidValue;
  memmove(dst, src, count);
  return cudaSuccess;
}

/* The per-thread-default-stream entry points (what cuda_runtime.h calls
 * under CUDA_API_PER_THREAD_DEFAULT_STREAM) and the legacy ones. */
cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count,
                            enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
                                 enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemsetAsync_ptsz(void *ptr, int value, size_t count,
                                 cudaStream_t stream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream);

cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count,
                            enum cudaMemcpyKind kind)
{
  return copy(dst, src, count, kind);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count,
                       enum cudaMemcpyKind kind)
{
  check_shared_context("cudaMemcpy", NULL);
  return copy(dst, src, count, kind);
}

cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
                                 enum cudaMemcpyKind kind, cudaStream_t stream)
{
  (void)stream;
  return copy(dst, src, count, kind);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                            enum cudaMemcpyKind kind, cudaStream_t stream)
{
  check_shared_context("cudaMemcpyAsync", stream);
  return copy(dst, src, count, kind);
}

static cudaError_t memset_device(void *ptr, int value, size_t count)
{
  pthread_mutex_lock(&lock);
  int inside = find_alloc(ptr, count) != NULL;
  pthread_mutex_unlock(&lock);
  if (!inside)
    return cudaErrorInvalidValue;
  memset(ptr, value, count);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync_ptsz(void *ptr, int value, size_t count,
                                 cudaStream_t stream)
{
  (void)stream;
  return memset_device(ptr, value, count);
}

cudaError_t cudaMemsetAsync(void *ptr, int value, size_t count,
                            cudaStream_t stream)
{
  check_shared_context("cudaMemsetAsync", stream);
  return memset_device(ptr, value, count);
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_device, const void *src,
                                int src_device, size_t count,
                                cudaStream_t stream)
{
  (void)dst_device;
  (void)src_device;
  check_shared_context("cudaMemcpyPeerAsync", stream);
  return copy(dst, src, count, cudaMemcpyDeviceToDevice);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags)
{
  (void)flags; /* simulated work never waits, blocking stream or not */
  return cudaStreamCreate(stream);
}

cudaError_t cudaStreamCreate(cudaStream_t *stream)
{
  if (injected_failure("cudaStreamCreate"))
    return cudaErrorMemoryAllocation;
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

cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
  (void)stream; /* every simulated operation completes when it is called */
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
  check_shared_context("cudaStreamSynchronize", stream);
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
  pthread_mutex_lock(&lock);
  for (struct CUstream_st **link = &streams; *link; link = &(*link)->next)
    if (*link == stream) {
      *link = stream->next;
      pthread_mutex_unlock(&lock);
      free(stream);
      return cudaSuccess;
    }
  pthread_mutex_unlock(&lock);
  return cudaErrorInvalidValue;
}

cudaError_t cudaDeviceSynchronize(void)
{
  check_shared_context("cudaDeviceSynchronize", NULL);
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event)
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

cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
  (void)stream;
  clock_gettime(CLOCK_MONOTONIC, &event->when);
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
  check_shared_context("cudaEventRecord", stream);
  return cudaEventRecord_ptsz(event, stream);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
  (void)event;
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
  *ms = (float)((end->when.tv_sec - start->when.tv_sec) * 1e3 +
                (end->when.tv_nsec - start->when.tv_nsec) / 1e6);
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
  pthread_mutex_lock(&lock);
  for (struct CUevent_st **link = &events; *link; link = &(*link)->next)
    if (*link == event) {
      *link = event->next;
      pthread_mutex_unlock(&lock);
      free(event);
      return cudaSuccess;
    }
  pthread_mutex_unlock(&lock);
  return cudaErrorInvalidValue;
}

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
  for (struct ncclWindow_vidmem **link = &windows; *link; link = &(*link)->next)
    if (*link == win) {
      if (win->comm != comm)
        violation(comm, "window-owner", "ncclCommWindowDeregister",
                  "the window was registered on another communicator");
      *link = win->next;
      pthread_mutex_unlock(&lock);
      free(win);
      return ncclSuccess;
    }
  pthread_mutex_unlock(&lock);
  violation(comm, "window-owner", "ncclCommWindowDeregister",
            "not a registered window (deregistered twice?)");
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
  for (struct ncclComm **link = &comms; *link; link = &(*link)->next)
    if (*link == comm) {
      *link = comm->next;
      pthread_mutex_unlock(&lock);
      free(comm);
      thread_rank = -1;
      return ncclSuccess;
    }
  pthread_mutex_unlock(&lock);
  return ncclInvalidArgument;
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

#if HAVE_CUBLAS
/* ------------------------------------------------------------------------
 * cuBLAS (--bench --overlap): accepted, not computed
 * --------------------------------------------------------------------- */

struct cublasContext {
  cudaStream_t stream;
};

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)
{
  if (injected_failure("cublasCreate_v2"))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  *handle = calloc(1, sizeof **handle);
  return *handle ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)
{
  free(handle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream)
{
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                              cublasOperation_t transb, int m, int n, int k,
                              const float *alpha, const float *A, int lda,
                              const float *B, int ldb, const float *beta,
                              float *C, int ldc)
{
  (void)handle, (void)transa, (void)transb, (void)alpha, (void)beta;
  (void)lda, (void)ldb, (void)ldc;
  if (injected_failure("cublasSgemm_v2"))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  pthread_mutex_lock(&lock);
  int inside = find_alloc(A, (size_t)m * k * 4) &&
               find_alloc(B, (size_t)k * n * 4) &&
               find_alloc(C, (size_t)m * n * 4);
  pthread_mutex_unlock(&lock);
  return inside ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}
#endif
