/* ncclsim: the CUDA runtime calls the examples make about devices and
 * errors (see sim.h; memory and copies: memory.c). */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* CTAs of blockSize threads one SM holds at once: the CTAs the simulation
 * keeps resident per kernel (kernels.c, resident_ctas: as an H100's SMs,
 * or SIM_CTA_SLOTS) over its SMs. A program that launches more than this
 * finds its extra CTAs waiting for a resident one to end, as on a GPU; 0
 * where the simulation holds fewer CTAs than SMs. (A GPU's answer may be
 * smaller: its registers and shared memory limit it, which the simulation
 * does not model.) */
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int *numBlocks, const void *func, int blockSize, size_t dynamicSMemSize,
    unsigned int flags)
{
  (void)dynamicSMemSize;
  (void)flags;
  if (numBlocks == NULL || func == NULL || blockSize <= 0 || blockSize > 1024)
    return cudaErrorInvalidValue;
  const long sms = env_long("SIM_SMS", 132);
  *numBlocks = sms > 0 ? (int)(resident_ctas((unsigned)blockSize) / sms) : 0;
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
