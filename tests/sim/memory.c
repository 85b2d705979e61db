/* ncclsim: CUDA memory (cudaMalloc, cudaFree) and the copies and memsets
 * the examples make, as CUDA orders them on streams (see sim.h); a
 * kernel's access that faults, named. */
#include "sim.h"
#include "garbage.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ncclMemAlloc's memory: a memfd of whole pages, mapped shared, with a
 * guard page after it. Peers in other processes map the same memfd to
 * reach it through ncclGetLsaPointer (device.c). NULL if out of memory. */
static void *shared_pages(size_t size, int *fd, size_t *mapped)
{
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  *mapped = (size ? size + page - 1 : page) / page * page;
  *fd = memfd_create("ncclMemAlloc", MFD_CLOEXEC);
  if (*fd < 0)
    return NULL;
  unsigned char *p = MAP_FAILED;
  if (ftruncate(*fd, (off_t)*mapped) == 0)
    p = mmap(NULL, *mapped + page, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p != MAP_FAILED &&
      mmap(p, *mapped, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, *fd,
           0) == MAP_FAILED) {
    munmap(p, *mapped + page);
    p = MAP_FAILED;
  }
  if (p == MAP_FAILED) {
    close(*fd);
    return NULL;
  }
  return p;
}

void release_alloc(sim_alloc *a)
{
  if (a->fd >= 0) {
    munmap(a->base, a->mapped + (size_t)sysconf(_SC_PAGESIZE));
    close(a->fd);
  } else if (a->mapped > 0)
    munmap(a->base, a->mapped);
  else
    free(a->base);
  free(a);
}

void *new_alloc(size_t size, enum alloc_kind kind)
{
  sim_alloc *a = calloc(1, sizeof *a);
  void *p = NULL;
  int fd = -1;
  size_t mapped = 0;
  if (a != NULL && kind == FROM_NCCL_MEM_ALLOC)
    p = shared_pages(size, &fd, &mapped);
  else if (a != NULL && size >= GARBAGE_FROM)
    p = garbage_pages(size, &mapped);
  else if (a != NULL &&
           posix_memalign(&p, NCCL_WIN_REQUIRED_ALIGNMENT, size ? size : 1) != 0)
    p = NULL;
  if (p == NULL) {
    free(a);
    return NULL;
  }
  /* Device memory starts as garbage, not zeros: all-ones bytes, which read
   * as NaN in every float, so that no value a program did not write can
   * pass a check (0xA5 bytes read as -2.87e-16, which passes for 0). A
   * large cudaMalloc's pages are so already. */
  if (kind == FROM_NCCL_MEM_ALLOC || mapped == 0)
    memset(p, 0xFF, size);
  *a = (sim_alloc){.base = p,
                   .size = size,
                   .kind = kind,
                   .device = current_device,
                   .fd = fd,
                   .mapped = mapped};
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
  order_host_waits_all();
  pthread_mutex_lock(&lock);
  sim_alloc *a = find_alloc(ptr, 1);
  if (a != NULL && a->kind == FROM_NCCL_MEM_ALLOC)
    violation(NULL, "free-with-ncclMemFree", "cudaFree",
              "%p came from ncclMemAlloc; release it with ncclMemFree", ptr);
  a = take_alloc(ptr);
  pthread_mutex_unlock(&lock);
  if (a == NULL)
    return cudaErrorInvalidValue;
  order_forget(a->base, a->size);
  release_alloc(a);
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
                    .copy_kind = 8, .call = call};
  if (kind == cudaMemcpyHostToDevice) {
    item.staged = src;
    item.copy_kind = 1;
  } else if (kind == cudaMemcpyDeviceToDevice) {
    item.src = src;
  }
  /* cudaMemcpy from pageable memory: "a stream sync is performed before
   * the copy is initiated" (CUDA's API synchronization behavior). */
  if (kind == cudaMemcpyHostToDevice && strcmp(call, "cudaMemcpy") == 0)
    stream_sync_point(stream, ptds_entry);
  if (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice)
    return enqueue(stream, ptds_entry, &item) ? cudaSuccess
                                               : cudaErrorMemoryAllocation;
  /* Into pageable memory: after the stream's earlier work, done when the
   * call returns; the rank's other streams are not waited for. */
  stream_sync_point(stream, ptds_entry);
  const void *key = queue_key(stream, ptds_entry);
  struct order_mark *m = order_queue(key, queue_kind(stream, ptds_entry), call);
  order_touch(m, src, count, 0);
  land_racing(m, src, count);
  order_begin(m);
  hb_host_access(src, count, HB_READ); /* out of a window: the host's read */
  memmove(dst, src, count);
  gpu_busy_until(current_device, gpu_now_ns(current_device) +
                                     work_ns(WORK_COPY, count, 0, sim_rank()));
  order_end(m);
  order_host_waits(key);
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
  NOTE_CALLER();
  return copy("cudaMemcpy", dst, src, count, kind, NULL, 1);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count,
                       enum cudaMemcpyKind kind)
{
  NOTE_CALLER();
  check_shared_context("cudaMemcpy", NULL);
  return copy("cudaMemcpy", dst, src, count, kind, NULL, 0);
}

cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
                                 enum cudaMemcpyKind kind, cudaStream_t stream)
{
  NOTE_CALLER();
  return copy("cudaMemcpyAsync", dst, src, count, kind, stream, 1);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                            enum cudaMemcpyKind kind, cudaStream_t stream)
{
  NOTE_CALLER();
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
  NOTE_CALLER();
  if (injected_failure("cudaMemsetAsync"))
    return cudaErrorUnknown;
  return memset_device(ptr, value, count, stream, 1);
}

cudaError_t cudaMemsetAsync(void *ptr, int value, size_t count,
                            cudaStream_t stream)
{
  NOTE_CALLER();
  if (injected_failure("cudaMemsetAsync"))
    return cudaErrorUnknown;
  check_shared_context("cudaMemsetAsync", stream);
  return memset_device(ptr, value, count, stream, 0);
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_device, const void *src,
                                int src_device, size_t count,
                                cudaStream_t stream)
{
  NOTE_CALLER();
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
                    .copy_kind = 10, .call = "cudaMemcpyPeerAsync"}; /* CUpti_ActivityMemcpyKind PTOP */
  return enqueue(stream, 1, &item) ? cudaSuccess : cudaErrorMemoryAllocation;
}

/* An access that faults inside a kernel: past the end of an ncclMemAlloc
 * buffer (into its guard page), or anywhere else. Named, with the GPU
 * thread's place; outside a kernel, the default action. */
static void on_fault(int sig, siginfo_t *info, void *context)
{
  (void)context;
  const unsigned char *at = info->si_addr;
  if (!in_kernel()) {
    signal(sig, SIG_DFL);
    return; /* the access faults again, and ends the process as usual */
  }
  char place[256], what[256] = "outside every buffer the simulation knows";
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  for (const sim_alloc *a = allocs; a; a = a->next) /* no lock: ending */
    if (a->fd >= 0 && at >= a->base + a->mapped &&
        at < a->base + a->mapped + page)
      snprintf(what, sizeof what,
               "byte %zu of the %zu-byte ncclMemAlloc buffer at %p: past its"
               " end", (size_t)(at - a->base), a->size, (void *)a->base);
  fprintf(stderr,
          "ncclsim: RULE VIOLATION [memory-access] rank %d in %s: an access at"
          " %p, %s (a window offset or an element index too large?)\n",
          current_kernel_rank(), current_place(place, sizeof place), (void *)at,
          what);
  _exit(SIM_EXIT_VIOLATION);
}

void sim_catch_kernel_faults(void)
{
  static int installed;
  if (__atomic_exchange_n(&installed, 1, __ATOMIC_ACQ_REL))
    return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &sa, NULL);
  sigaction(SIGBUS, &sa, NULL);
}
