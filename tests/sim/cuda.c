/* ncclsim: the CUDA runtime calls the examples make (see sim.h). */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * CUDA runtime
 * --------------------------------------------------------------------- */

/* The machine's devices are SIM_DEVICES (default 8). A process sees those
 * that CUDA_VISIBLE_DEVICES lists, as CUDA reads it: indices separated by
 * commas, up to the first entry that names no device (so "0,9" with 4
 * devices is device 0 alone, and "9" is none); unset, all of them. Device
 * UUIDs and MIG names in the list are not simulated. Fills map (the
 * machine's index of each visible device, up to max) and returns how many
 * are visible. */
static int visible_list(int *map, int max)
{
  const int machine = (int)env_long("SIM_DEVICES", 8);
  const char *list = getenv("CUDA_VISIBLE_DEVICES");
  int n = 0;
  if (list == NULL) {
    for (; n < machine; n++)
      if (n < max)
        map[n] = n;
    return n;
  }
  for (const char *p = list; *p;) {
    char *end = NULL;
    long d = strtol(p, &end, 10);
    if (end == p || (*end != ',' && *end != '\0') || d < 0 || d >= machine)
      break;
    for (int i = 0; i < n && i < max; i++)
      if (map[i] == d)
        return n; /* CUDA stops at a device listed twice */
    if (n < max)
      map[n] = (int)d;
    n++;
    p = *end == ',' ? end + 1 : end;
  }
  return n;
}

int visible_devices(void)
{
  int map[1];
  return visible_list(map, 0);
}

int machine_device(int device)
{
  int map[1024];
  const int n = visible_list(map, 1024);
  return device >= 0 && device < n && device < 1024 ? map[device] : -1;
}

/* Its name and multiprocessors, and a UUID made of the machine's index of
 * the device: two processes that see one device through different
 * CUDA_VISIBLE_DEVICES see the same UUID. */
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
  if (injected_failure("cudaGetDeviceProperties"))
    return cudaErrorUnknown;
  const int physical = machine_device(device);
  if (prop == NULL || physical < 0)
    return prop == NULL ? cudaErrorInvalidValue : cudaErrorInvalidDevice;
  memset(prop, 0, sizeof *prop);
  snprintf(prop->name, sizeof prop->name, "NVIDIA H200 (simulated)");
  prop->multiProcessorCount = (int)env_long("SIM_SMS", 132);
  static const unsigned char base[16] = {0x51, 0x3d, 0x00, 0x00, 0xc0, 0xde,
                                         0x40, 0x00, 0x80, 0x00, 0x00, 0x00,
                                         0x00, 0x00, 0x00, 0x00};
  memcpy(prop->uuid.bytes, base, sizeof base);
  prop->uuid.bytes[15] = (char)physical;
  return cudaSuccess;
}

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
void check_shared_context(const char *call, cudaStream_t stream)
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
  if (injected_failure("cudaGetDeviceCount"))
    return cudaErrorUnknown;
  *count = visible_devices();
  if (*count <= 0) {
    *count = 0;
    return cudaErrorNoDevice;
  }
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
  if (injected_failure("cudaSetDevice"))
    return cudaErrorUnknown;
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
  if (injected_failure("cudaDeviceGetAttribute"))
    return cudaErrorUnknown;
  if (device < 0 || device >= visible_devices())
    return cudaErrorInvalidDevice;
  if (attr == cudaDevAttrMultiProcessorCount)
    *value = (int)env_long("SIM_SMS", 132); /* an H200's */
  else if (attr == cudaDevAttrL2CacheSize)
    *value = (int)env_long("SIM_L2_BYTES", 50L << 20);
  else
    return cudaErrorInvalidValue;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *version)
{
  if (injected_failure("cudaDriverGetVersion"))
    return cudaErrorUnknown;
  *version = (int)env_long("SIM_DRIVER_VERSION", 13000);
  return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int *can, int device, int peer)
{
  if (injected_failure("cudaDeviceCanAccessPeer"))
    return cudaErrorUnknown;
  int n = visible_devices();
  if (device < 0 || device >= n || peer < 0 || peer >= n)
    return cudaErrorInvalidDevice;
  *can = device != peer && env_long("SIM_NO_P2P", 0) == 0;
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
  case cudaErrorNotReady: return "device not ready";
  case cudaErrorInvalidResourceHandle: return "invalid resource handle";
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
  case cudaErrorNotReady: return "cudaErrorNotReady";
  case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
  default: return "cudaErrorUnknown";
  }
}

void *new_alloc(size_t size, enum alloc_kind kind)
{
  sim_alloc *a = calloc(1, sizeof *a);
  void *p = NULL;
  if (a == NULL ||
      posix_memalign(&p, NCCL_WIN_REQUIRED_ALIGNMENT, size ? size : 1) != 0) {
    free(a);
    return NULL;
  }
  /* Device memory starts as garbage, not zeros: all-ones bytes, which read
   * as NaN in every float, so that no value a program did not write can
   * pass a check (0xA5 bytes read as -2.87e-16, which passes for 0). */
  memset(p, 0xFF, size);
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
sim_alloc *take_alloc(const void *p)
{
  sim_alloc *a = allocs;
  while (a != NULL && a->base != p)
    a = a->next;
  int found = 0;
  if (a != NULL)
    LIST_UNLINK(allocs, a, found);
  return found ? a : NULL;
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
  if (injected_failure("cudaFree"))
    return cudaErrorUnknown;
  if (ptr == NULL)
    return cudaSuccess;
  land_device_work(); /* cudaFree waits for the device */
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

/* A copy on `stream` (cudaMemcpy: the default stream). Host memory here is
 * always pageable (the programs allocate no pinned memory): a
 * host-to-device copy is staged at the call and written when its stream's
 * work runs; a device-to-device copy is queued and reads its source then;
 * a copy into host memory waits for its stream's earlier work and is done
 * when the call returns, as CUDA does for copies to pageable memory. */
static cudaError_t copy(const char *call, void *dst, const void *src,
                        size_t count, enum cudaMemcpyKind kind,
                        cudaStream_t stream, int ptds_entry)
{
  if (injected_failure(call))
    return cudaErrorInvalidValue;
  refuse_in_capture(call, stream);
  pthread_mutex_lock(&lock);
  int dst_dev = find_alloc(dst, count) != NULL;
  int src_dev = find_alloc(src, count) != NULL;
  pthread_mutex_unlock(&lock);
  /* Like real CUDA, a copy whose device side is not device memory fails. */
  if ((kind == cudaMemcpyHostToDevice && !dst_dev) ||
      (kind == cudaMemcpyDeviceToHost && !src_dev) ||
      (kind == cudaMemcpyDeviceToDevice && !(dst_dev && src_dev)))
    return cudaErrorInvalidValue;
  /* CUPTI's CUpti_ActivityMemcpyKind: HTOD 1, DTOH 2, DTOD 8. */
  work_item item = {.kind = WORK_COPY, .dst = dst, .size = count,
                    .copy_kind = 8};
  if (kind == cudaMemcpyHostToDevice) {
    item.staged = src;
    item.copy_kind = 1;
  } else if (kind == cudaMemcpyDeviceToDevice) {
    item.src = src;
  }
  if (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice)
    return enqueue(stream, ptds_entry, &item) ? cudaSuccess
                                               : cudaErrorMemoryAllocation;
  stream_sync_point(stream, ptds_entry);
  memmove(dst, src, count);
  if (cupti_copy != NULL && cupti_launch != NULL)
    cupti_copy(cupti_launch(), current_device, 2, count);
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

cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count,
                            enum cudaMemcpyKind kind)
{
  return copy("cudaMemcpy", dst, src, count, kind, NULL, 1);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count,
                       enum cudaMemcpyKind kind)
{
  check_shared_context("cudaMemcpy", NULL);
  return copy("cudaMemcpy", dst, src, count, kind, NULL, 0);
}

cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
                                 enum cudaMemcpyKind kind, cudaStream_t stream)
{
  return copy("cudaMemcpyAsync", dst, src, count, kind, stream, 1);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                            enum cudaMemcpyKind kind, cudaStream_t stream)
{
  check_shared_context("cudaMemcpyAsync", stream);
  return copy("cudaMemcpyAsync", dst, src, count, kind, stream, 0);
}

static cudaError_t memset_device(void *ptr, int value, size_t count,
                                 cudaStream_t stream, int ptds_entry)
{
  refuse_in_capture("cudaMemsetAsync", stream);
  pthread_mutex_lock(&lock);
  int inside = find_alloc(ptr, count) != NULL;
  pthread_mutex_unlock(&lock);
  if (!inside)
    return cudaErrorInvalidValue;
  work_item item = {
      .kind = WORK_MEMSET, .dst = ptr, .size = count, .value = value};
  return enqueue(stream, ptds_entry, &item) ? cudaSuccess
                                             : cudaErrorMemoryAllocation;
}

cudaError_t cudaMemsetAsync_ptsz(void *ptr, int value, size_t count,
                                 cudaStream_t stream)
{
  if (injected_failure("cudaMemsetAsync"))
    return cudaErrorUnknown;
  return memset_device(ptr, value, count, stream, 1);
}

cudaError_t cudaMemsetAsync(void *ptr, int value, size_t count,
                            cudaStream_t stream)
{
  if (injected_failure("cudaMemsetAsync"))
    return cudaErrorUnknown;
  check_shared_context("cudaMemsetAsync", stream);
  return memset_device(ptr, value, count, stream, 0);
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_device, const void *src,
                                int src_device, size_t count,
                                cudaStream_t stream)
{
  if (injected_failure("cudaMemcpyPeerAsync"))
    return cudaErrorUnknown;
  (void)dst_device;
  (void)src_device;
  check_shared_context("cudaMemcpyPeerAsync", stream);
  refuse_in_capture("cudaMemcpyPeerAsync", stream);
  pthread_mutex_lock(&lock);
  int inside = find_alloc(dst, count) != NULL && find_alloc(src, count) != NULL;
  pthread_mutex_unlock(&lock);
  if (!inside)
    return cudaErrorInvalidValue;
  work_item item = {.kind = WORK_COPY, .dst = dst, .src = src, .size = count,
                    .copy_kind = 10}; /* CUpti_ActivityMemcpyKind PTOP */
  return enqueue(stream, 1, &item) ? cudaSuccess : cudaErrorMemoryAllocation;
}
