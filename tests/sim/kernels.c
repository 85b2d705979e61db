/* ncclsim: kernels (see sim.h): a program's own, launched through
 * ncclsim_launch (run by fibers.c), and the one kernel a program may load,
 * and what NCCL's symmetric kernels do after it.
 *
 * A program may load code with cudaLibraryLoadData and launch it with
 * cudaLaunchKernel. The simulation cannot run PTX: it knows one kernel,
 * the facts probe's writer `fill` (tools/facts/order.c), which stores one
 * float into every element of a buffer after letting the next kernel on
 * its stream start, if asked. Any other code is refused. */
#include "sim.h"

#include "ncclsim_device.h"

#include <execinfo.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct CUlib_st {
  int loaded;
};
struct CUkern_st {
  int fill;
};
static struct CUlib_st library;
static struct CUkern_st fill_kernel = {1};

cudaError_t cudaLibraryLoadData(cudaLibrary_t *lib, const void *code,
                                enum cudaJitOption *jit_options,
                                void **jit_values, unsigned int njit,
                                enum cudaLibraryOption *options, void **values,
                                unsigned int noptions)
{
  (void)jit_options, (void)jit_values, (void)njit;
  (void)options, (void)values, (void)noptions;
  if (lib == NULL || code == NULL)
    return cudaErrorInvalidValue;
  if (strstr(code, ".entry fill(") == NULL) {
    fprintf(stderr, "ncclsim: cudaLibraryLoadData: the simulation knows one"
                    " kernel, the facts probe's 'fill'\n");
    return cudaErrorInvalidPtx;
  }
  __atomic_add_fetch(&library.loaded, 1, __ATOMIC_RELAXED);
  *lib = &library;
  return cudaSuccess;
}

cudaError_t cudaLibraryGetKernel(cudaKernel_t *kernel, cudaLibrary_t lib,
                                 const char *name)
{
  if (kernel == NULL || lib != &library || name == NULL)
    return cudaErrorInvalidValue;
  if (strcmp(name, "fill") != 0)
    return cudaErrorSymbolNotFound;
  *kernel = &fill_kernel;
  return cudaSuccess;
}

cudaError_t cudaLibraryUnload(cudaLibrary_t lib)
{
  if (lib != &library ||
      __atomic_sub_fetch(&library.loaded, 1, __ATOMIC_RELAXED) < 0)
    return cudaErrorInvalidValue;
  return cudaSuccess;
}

/* fill(float *buf, unsigned n, float value, unsigned lets_next_start,
 * unsigned delay_ns) */
static cudaError_t launch(const void *func, void **args, cudaStream_t stream,
                          int ptds_entry)
{
  if (func != (const void *)&fill_kernel || args == NULL)
    return cudaErrorInvalidDeviceFunction;
  refuse_in_capture("cudaLaunchKernel", stream);
  float *buf = *(float **)args[0];
  const unsigned n = *(unsigned *)args[1];
  pthread_mutex_lock(&lock);
  int inside = find_alloc(buf, (size_t)n * sizeof(float)) != NULL;
  pthread_mutex_unlock(&lock);
  if (!inside)
    return cudaErrorIllegalAddress;
  work_item item = {.kind = WORK_FILL,
                    .dst = buf,
                    .size = n,
                    .fill_value = *(float *)args[2],
                    .lets_next_start = *(unsigned *)args[3] != 0};
  return enqueue(stream, ptds_entry, &item) ? cudaSuccess
                                             : cudaErrorMemoryAllocation;
}

cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block,
                             void **args, size_t shared, cudaStream_t stream)
{
  (void)grid, (void)block, (void)shared;
  NOTE_CALLER();
  check_shared_context("cudaLaunchKernel", stream);
  return launch(func, args, stream, 0);
}

cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 grid, dim3 block,
                                  void **args, size_t shared,
                                  cudaStream_t stream)
{
  (void)grid, (void)block, (void)shared;
  NOTE_CALLER();
  return launch(func, args, stream, 1);
}

int reads_early(const sim_node *node)
{
  const int v = simulated_version();
  const size_t bytes = node->count * sim_element_size(node);
  const size_t out = node->allgather ? bytes * (size_t)node->comm->nranks
                                     : bytes;
  return v >= NCCL_VERSION(2, 28, 0) && v < NCCL_VERSION(2, 30, 7) &&
         node->comm->nranks > 1 &&
         in_symmetric_window(node->comm, node->send, bytes) &&
         in_symmetric_window(node->comm, node->recv, out);
}

/* ---------------------------------------------- a program's own kernels */

static _Thread_local cudaError_t launch_error = cudaSuccess;

static unsigned volume(dim3 d) { return d.x * d.y * d.z; }

/* An SM of compute capability 9.0 (H100, H200) keeps up to 32 CTAs and
 * 2048 threads (CUDA C++ Programming Guide, "Compute Capabilities"; what
 * registers and shared memory allow is not simulated). */
long resident_ctas(unsigned threads)
{
  const long set = env_long("SIM_CTA_SLOTS", 0);
  if (set > 0)
    return set;
  const long per_sm = 2048 / (long)(threads > 0 ? threads : 1);
  return env_long("SIM_SMS", 132) * (per_sm < 32 ? (per_sm > 0 ? per_sm : 1) : 32);
}


struct sim_kernel *copy_kernel(const struct sim_kernel *k)
{
  struct sim_kernel *c = malloc(sizeof *c);
  void *args = c ? k->clone(k->args) : NULL;
  if (args == NULL) {
    free(c);
    return NULL;
  }
  *c = *k;
  c->args = args;
  if (k->devcomm != NULL) /* the device communicator among the arguments */
    c->devcomm = (const void *)((const unsigned char *)args +
                                ((const unsigned char *)k->devcomm -
                                 (const unsigned char *)k->args));
  return c;
}

void free_kernel(struct sim_kernel *k)
{
  k->release(k->args);
  free(k);
}

cudaError_t queue_kernel(struct sim_kernel *k, cudaStream_t stream)
{
  work_item item = {.kind = WORK_KERNEL, .kernel = k};
  if (!enqueue(stream, 1, &item)) {
    free_kernel(k);
    return launch_error = cudaErrorMemoryAllocation;
  }
  return cudaSuccess;
}

cudaError_t ncclsim_launch(const char *name, dim3 grid, dim3 block,
                           size_t shared_bytes, cudaStream_t stream,
                           const ncclDevComm_t *devcomm,
                           void (*thread)(void *), void *args,
                           void (*release)(void *),
                           void *(*clone)(const void *))
{
  /* called from the device API header's launch wrapper: the places above */
  order_nframes = backtrace(order_frames, ORDER_FRAMES);
  if (order_nframes > 1) /* (this one's own frame is not the program's) */
    memmove(order_frames, order_frames + 1, (size_t)--order_nframes * sizeof *order_frames);
  if (clone == NULL)
    refuse_in_capture("a kernel launch", stream);
  if (volume(block) == 0 || volume(block) > 1024 || block.z > 64 ||
      volume(grid) == 0 || grid.y > 65535 || grid.z > 65535) {
    order_nframes = 0;
    release(args);
    return launch_error = cudaErrorInvalidConfiguration;
  }
  if (volume(grid) > HB_LANES) { /* the happens-before clocks' lanes */
    fprintf(stderr, "ncclsim: not simulated here: %s: a grid of %u CTAs,"
                    " over the %d the simulation's clocks keep apart"
                    " (tests/README.md)\n", name, volume(grid), HB_LANES);
    _exit(SIM_EXIT_VIOLATION);
  }
  if (shared_bytes > 48 * 1024) { /* more needs cudaFuncSetAttribute */
    fprintf(stderr, "ncclsim: %s: %zu bytes of dynamic shared memory, over"
                    " the 48 KiB a launch gets without"
                    " cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicShared"
                    "MemorySize), which the simulation does not have\n",
            name, shared_bytes);
    order_nframes = 0;
    release(args);
    return launch_error = cudaErrorInvalidValue;
  }
  struct sim_kernel *k = malloc(sizeof *k);
  if (k == NULL) {
    order_nframes = 0;
    release(args);
    return launch_error = cudaErrorMemoryAllocation;
  }
  *k = (struct sim_kernel){name, grid, block, shared_bytes, devcomm,
                           sim_rank(), current_device, thread, args, release,
                           clone};
  cudaError_t res = record_kernel(stream, k) /* captured: runs at each replay */
                        ? cudaSuccess
                        : queue_kernel(k, stream);
  order_nframes = 0;
  return res;
}

cudaError_t cudaGetLastError(void)
{
  cudaError_t e = launch_error;
  launch_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void) { return launch_error; }
